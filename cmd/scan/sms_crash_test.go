package main

// The kill matrix of the sms channel: the real binary, killed with SIGKILL
// at each boundary of the sms path (before the claim, after its commit,
// after Twilio accepted a message, after an outcome committed), then run
// again to completion. What the Twilio stand-in received, per number,
// proves the guarantee: no SMS twice, and every notice sent or in
// quarantine.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"scan/internal/ledger"
	"scan/internal/provider/twilio/twiliotest"
)

const smsNotices = 12

// smsFixture is a fixture whose rows have no email and a phone each, with
// the kind going by [email, sms], and a Twilio stand-in.
func smsFixture(t *testing.T) (*fixture, *twiliotest.Server, []string) {
	return smsFixtureOf(t, "[email, sms]", "email = NULL, ")
}

// smsFixtureOf is smsFixture with the kind's channels and the rows'
// update (set before the phone) given.
func smsFixtureOf(t *testing.T, channels, set string) (*fixture, *twiliotest.Server, []string) {
	f := newFixture(t, smsNotices, "")
	if _, err := f.db.Exec(`UPDATE subscriptions SET ` + set + `phone = '+1415555' || right(id, 4)`); err != nil {
		t.Fatal(err)
	}
	pol := strings.NewReplacer("    close_before: 24h\n", "    close_before: 24h\n    channels: "+channels+"\n",
		"  global: {per_second: 100000, burst: 10000}\n", "  global: {per_second: 100000, burst: 10000}\n  sms: {per_second: 1000, burst: 100}\n").Replace(testPolicy)
	if !strings.Contains(pol, "sms: {") || !strings.Contains(pol, "channels:") {
		t.Fatal("testPolicy changed: update smsFixture's replacements")
	}
	f.setPolicy(pol + "sms_max_segments: 3\n")
	tw := twiliotest.New(t)
	return f, tw, []string{"TWILIO_ACCOUNT_SID=" + tw.AccountSID, "TWILIO_AUTH_TOKEN=" + tw.AuthToken,
		"TWILIO_FROM=+15005550006", "TWILIO_API_URL=" + tw.URL, "SCAN_TWILIO_STATUS_CALLBACK=https://hooks.example.com/events/twilio"}
}

// smsCheck wants no number texted twice and every sms row sent (texted
// once) or claimed (texted at most once); with final, every row has one.
func smsCheck(t *testing.T, f *fixture, tw *twiliotest.Server, final bool) (sent, quarantined int) {
	t.Helper()
	for i := 1; i <= smsNotices; i++ {
		phone := fmt.Sprintf("+1415555%04d", i)
		n := tw.To(phone)
		if n > 1 {
			t.Errorf("%s texted %d times", phone, n)
		}
		var st []ledger.State
		if err := f.db.Select(&st, `SELECT state FROM notice_ledger WHERE subscription_id = $1 AND channel = 'sms'`, subID(i)); err != nil {
			t.Fatal(err)
		}
		switch {
		case len(st) == 0 && final:
			t.Errorf("%s: no sms row after a completed pass", subID(i))
		case len(st) == 0 && n > 0:
			t.Errorf("%s: texted without a claim", subID(i))
		case len(st) == 1 && st[0] == ledger.Sent:
			sent++
			if n != 1 {
				t.Errorf("%s: sent, texted %d times", subID(i), n)
			}
		case len(st) == 1 && st[0] == ledger.Claimed:
			quarantined++
		case len(st) == 1:
			t.Errorf("%s: sms row %s", subID(i), st[0])
		}
	}
	return sent, quarantined
}

func TestSMSKillMatrix(t *testing.T) {
	t.Parallel()
	smsKillMatrix(t, smsFixture)
}

// The same matrix for a kind that goes by sms only ([sms]), whose rows
// all have a usable email too: none is ever mailed.
func TestSMSOnlyKillMatrix(t *testing.T) {
	t.Parallel()
	smsKillMatrix(t, func(t *testing.T) (*fixture, *twiliotest.Server, []string) {
		f, tw, env := smsFixtureOf(t, "[sms]", "")
		t.Cleanup(func() {
			if n := f.smtp.Total(); n != 0 {
				t.Errorf("a kind that goes by sms only mailed %d notices", n)
			}
		})
		return f, tw, env
	})
}

func smsKillMatrix(t *testing.T, fixtureOf func(*testing.T) (*fixture, *twiliotest.Server, []string)) {
	// The sms stage records its outcomes in batches, as email's (issue
	// 34): the first batch's commit is the outcome boundary, as in the
	// email matrices (it was the 5th of one commit per notice).
	for _, fp := range []string{"before-claim", "after-claim-commit", "after-accepted:3", "after-outcome-commit"} {
		t.Run(fp, func(t *testing.T) {
			t.Parallel()
			f, tw, env := fixtureOf(t)
			r := f.scan(f.env(append(env, "SCAN_FAILPOINT="+fp)...), "run", "--batch-size", "20")
			if !r.killed {
				t.Fatalf("fail point %s did not crash the pass: exit %d\n%s", fp, r.code, tail(r.stderr))
			}
			smsCheck(t, f, tw, false)
			before := len(tw.Requests())
			s := f.mustRun(f.env(env...))
			sent, quarantined := smsCheck(t, f, tw, true)
			t.Logf("%s: texted %d before the rerun, %d after; sent %d, quarantined %d; rerun %+v", fp, before, len(tw.Requests()), sent, quarantined, s)
			if sent+quarantined != smsNotices || len(tw.Requests()) > smsNotices {
				t.Fatalf("after the rerun: sent %d, quarantined %d, requests %d", sent, quarantined, len(tw.Requests()))
			}
			if fp == "before-claim" && (sent != smsNotices || before != 0) {
				t.Fatalf("killed before the claim: sent %d, texted before %d", sent, before)
			}
		})
	}
}

// A template over sms_max_segments, or Twilio settings missing: exit 2,
// nothing written.
func TestSMSConfigRefused(t *testing.T) {
	t.Parallel()
	f, _, env := smsFixture(t)
	for name, extra := range map[string][]string{
		"no token":     {"TWILIO_AUTH_TOKEN="},
		"no sender":    {"TWILIO_FROM="},
		"remote api":   {"TWILIO_API_URL=https://api.twilio.com"},
		"bad callback": {"SCAN_TWILIO_STATUS_CALLBACK=nope"},
		"one segment":  {"SCAN_CONFIG=" + writeFile(t, strings.Replace(readFile(t, f.policy), "sms_max_segments: 3", "sms_max_segments: 1", 1))},
	} {
		code, _, errOut := f.runIn(append(append([]string{}, env...), extra...), "run")
		if code != 2 {
			t.Errorf("%s: exit %d, want 2 (%s)", name, code, tail(errOut))
		}
	}
	if c := f.counts(); len(c) != 0 {
		t.Fatalf("refused passes wrote %v", c)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}
