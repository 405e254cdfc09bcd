package main

import (
	"os"
	"strings"
	"testing"
)

// What a notice says, through the command: a kind's anchor the source
// lacks, and every bad new policy key, exit 2 naming it, writing and
// sending nothing; a trial_ending kind on the reference table runs.
func TestNoticeContentConfigErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, "")
	base, err := os.ReadFile(f.policy)
	if err != nil {
		t.Fatal(err)
	}
	trial := "  - kind: trial_ending\n    anchor: %s\n    open_before: 21d\n    close_before: 7d\n"
	withKind := func(anchor string) string {
		return strings.Replace(string(base), "rate:\n", strings.Replace(trial, "%s", anchor, 1)+"rate:\n", 1)
	}
	for _, tc := range []struct{ yaml, want string }{
		{withKind("price_changes_at"), `notices[trial_ending].anchor: relation "subscriptions" has no column "price_changes_at"`},
		{withKind("email"), `column "email" of relation "subscriptions" is text, not timestamptz`},
		{withKind("Trial"), "notices[trial_ending].anchor"},
		{string(base) + "default_locale: \"en US!\"\n", "default_locale"},
		{string(base) + "default_time_zone: Mars/Base\n", "default_time_zone"},
		{string(base) + "preferences_url: \"https://example.com/cancel?token={token}\"\n", "preferences_url"},
		{string(base) + "quiet_hours: {from: \"21:00\"}\n", "quiet_hours.to"},
		{string(base) + "legal: {US-CA: {min_lead: 1h, max_lead: 45d, requires: [price]}}\n", "legal[US-CA].requires"},
	} {
		code, out, errOut := f.runIn([]string{"SCAN_CONFIG=" + writePolicy(t, tc.yaml)}, "run")
		if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 2 naming %q", code, out, tail(errOut), tc.want)
		}
	}
	if n := f.ledgerCount(); n != 0 || f.smtp.Total() != 0 {
		t.Fatalf("refused runs wrote %d ledger rows and sent %d", n, f.smtp.Total())
	}
	// The reference table has trial_ends_at: the same kind runs.
	s, _ := f.passIn([]string{"SCAN_CONFIG=" + writePolicy(t, withKind("trial_ends_at"))})
	if s.Sent != 3 || s.Invalid != 0 {
		t.Fatalf("with trial_ends_at: %+v", s)
	}
}
