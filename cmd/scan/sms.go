package main

import (
	"sync/atomic"
	"time"

	"scan/internal/clock"
	"scan/internal/message"
	"scan/internal/policy"
	"scan/internal/provider/twilio"
	"scan/internal/send"
)

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
