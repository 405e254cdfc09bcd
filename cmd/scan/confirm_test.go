package main

import (
	"strings"
	"testing"
)

// confirm_within (issue 36) is refused before anything is written (exit
// 2, one line naming the kind and the field): with provider none, and
// with a sender that cannot report delivery (outbox, http, or either in a
// failover list). With a provider and the smtp sender the pass runs.
func TestConfirmWithinRefusedWhenNothingCanConfirm(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	withConfirm := func(provider string) string {
		return strings.Replace(testPolicy, "    close_before: 24h\n", "    close_before: 24h\n    channels: [email, sms]\n    confirm_within: 2h\n", 1) +
			"provider: " + provider + "\n"
	}
	for _, tc := range []struct {
		provider string
		extra    []string
	}{
		{"none", nil},
		{"sendgrid", []string{"SCAN_SENDER=outbox", "SCAN_OUTBOX_DIR=" + t.TempDir()}},
		{"sendgrid", []string{"SCAN_SENDER=http", "SCAN_HTTP_URL=http://127.0.0.1:9/notices"}},
	} {
		f.setPolicy(withConfirm(tc.provider))
		code, out, errOut := f.runIn(tc.extra, "run", "--batch-size", "20")
		if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 ||
			!strings.Contains(errOut, "notices[renewal_notice_t72].confirm_within") || !strings.Contains(errOut, "kind renewal_notice_t72") {
			t.Errorf("provider %s, %v: exit %d, stdout %q, stderr %q", tc.provider, tc.extra, code, out, errOut)
		}
		if n := len(f.rows()); n != 0 || f.smtp.Total() != 0 {
			t.Fatalf("provider %s, %v: %d ledger rows, %d messages after a refusal", tc.provider, tc.extra, n, f.smtp.Total())
		}
	}
	f.setPolicy(withConfirm("sendgrid"))
	if s, _ := f.passIn([]string{"TWILIO_ACCOUNT_SID=AC00000000000000000000000000000000", "TWILIO_AUTH_TOKEN=t", "TWILIO_FROM=+15005550006",
		"TWILIO_API_URL=http://127.0.0.1:9"}); s.Sent != 2 {
		t.Fatalf("with provider sendgrid and the smtp sender: %+v", s)
	}
}
