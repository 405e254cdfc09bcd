package main

import (
	"errors"
	"net/url"
	"sync/atomic"
	"time"

	"scan/internal/clock"
	"scan/internal/message"
	"scan/internal/policy"
	"scan/internal/provider/twilio"
	"scan/internal/send"
)

// newSMSSender builds the sms channel's Twilio client from TWILIO_* and
// SCAN_TWILIO_STATUS_CALLBACK when a kind goes by sms; nil otherwise.
// Outside production (SCAN_ENVIRONMENT) the API must be on loopback, and
// a staging redirect (SCAN_REDIRECT_TO, an email address) turns the sms
// channel off: no pass may text a real customer from staging.
func newSMSSender(e *env, pol *policy.Policy, production bool, redirect string, at *passClock) (*twilio.Client, error) {
	if !pol.UsesSMS() || redirect != "" {
		return nil, nil
	}
	c, err := twilio.New(twilio.Config{
		AccountSID: e.getenv("TWILIO_ACCOUNT_SID"), AuthToken: e.getenv("TWILIO_AUTH_TOKEN"),
		From: e.getenv("TWILIO_FROM"), MessagingServiceSID: e.getenv("TWILIO_MESSAGING_SERVICE_SID"),
		BaseURL: e.getenv("TWILIO_API_URL"), StatusCallback: e.getenv("SCAN_TWILIO_STATUS_CALLBACK"),
		Clock: at,
	})
	var ce *twilio.ConfigError
	if errors.As(err, &ce) {
		return nil, usagef(ce.Field, "%s", ce.Msg)
	}
	if err != nil {
		return nil, err
	}
	api := e.getenv("TWILIO_API_URL")
	if api == "" {
		api = twilio.DefaultBaseURL
	}
	if u, _ := url.Parse(api); !production && !send.IsLoopback(u.Hostname()) {
		return nil, usagef("TWILIO_API_URL", "%s is not loopback: outside SCAN_ENVIRONMENT=production the sms channel only talks to a stand-in", u.Host)
	}
	return c, nil
}

// passClock is the commands' clock moved to the pass's now (--now, else
// the clock's own): what the sms sender counts a text's ValidityPeriod
// from, so that a text's deadline (notice.DeliverBy, from the pass's
// now) leaves it exactly the time the pass saw left. newPass sets the
// shift of each pass.
type passClock struct {
	clock.Clock
	shift atomic.Int64 // nanoseconds
}

func newPassClock(e *env) *passClock {
	c := &passClock{Clock: e.clock}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	return c
}

// startAt shifts the clock so that it reads now at the instant given by
// the unshifted clock, read now (a pass's start).
func (c *passClock) startAt(now time.Time) { c.shift.Store(int64(now.Sub(c.Clock.Now()))) }

// Now returns the clock's time shifted to the pass's.
func (c *passClock) Now() time.Time { return c.Clock.Now().Add(time.Duration(c.shift.Load())) }

// smsSender is c as the pass's sender, nil (no sms stage) for none.
func smsSender(c *twilio.Client) send.Sender {
	if c == nil {
		return nil
	}
	return c
}

// checkSMSTemplates renders a sample sms of every kind with the sms
// channel in English, German and the default locale, and refuses (exit 2)
// one over sms_max_segments or one that does not render.
func checkSMSTemplates(r *message.Renderer, pol *policy.Policy) error {
	var samples []message.SMSSample
	for _, k := range pol.Notices {
		if !k.HasSMS() {
			continue
		}
		for _, l := range []string{"en", "de", pol.DefaultLocale} {
			samples = append(samples, message.SMSSample{Kind: k.Kind, Locale: l})
		}
	}
	if err := r.CheckSMS(samples, pol.SMSMaxSegments); err != nil {
		return usagef("sms_max_segments", "%v", err)
	}
	return nil
}
