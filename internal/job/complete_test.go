package job_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"scan/internal/clock"
	"scan/internal/job"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/senders"
)

// Complete builds the renderer (and no sms sender for an email-only
// policy), and refuses what the settings cannot do together: a
// confirm_within no sender of the list can report, a sample value in
// production, the sms channel without its account.
func TestCompleteChecksTheSettingsTogether(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	noEnv := func(string) string { return "" }
	complete := func(names []string, production bool, spoil func(*policy.Policy)) (*job.Config, error) {
		pol := mustDefault(t, now)
		spoil(pol)
		sc := senders.Config{Names: names, Getenv: noEnv, Production: production}
		set, err := senders.Prepare(sc)
		if err != nil {
			t.Fatal(err)
		}
		c := &job.Config{Policy: pol, Senders: set}
		return c, c.Complete(sc, clock.System{})
	}
	c, err := complete([]string{senders.Outbox}, false, func(*policy.Policy) {})
	if err != nil || c.Renderer == nil || c.SMSClock == nil || c.SMS != nil {
		t.Fatalf("the built-in policy by the outbox: %v (renderer %v, sms clock %v, sms %v); want a renderer, a clock, no sms sender",
			err, c.Renderer != nil, c.SMSClock != nil, c.SMS != nil)
	}
	for name, tc := range map[string]struct {
		names      []string
		production bool
		spoil      func(*policy.Policy)
		field      string
	}{
		"confirm_within by the outbox": {[]string{senders.Outbox}, false,
			func(p *policy.Policy) { p.Notices[0].ConfirmWithin = policy.Duration(time.Hour) }, ".confirm_within"},
		"sample values in production": {[]string{senders.Outbox}, true, func(*policy.Policy) {}, "from"},
		"sms without its account": {[]string{senders.Outbox}, false,
			func(p *policy.Policy) { p.Notices[0].Channels = []string{notice.ChannelEmail, notice.ChannelSMS} }, "TWILIO_"},
	} {
		_, err := complete(tc.names, tc.production, tc.spoil)
		var pe *policy.Error
		var se *senders.ConfigError
		if err == nil || !(errors.As(err, &pe) || errors.As(err, &se)) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v; want a configuration error naming %s", name, err, tc.field)
		}
	}
}
