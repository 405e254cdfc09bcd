package main

// The kill matrix of the email notices of a kind with channels [sms,
// email] (email when sms cannot reach the customer): every row has an
// email and no phone, so the sms stage records each sms notice failed
// no_usable_address and the email stage mails it. The real binary is
// killed with SIGKILL at each boundary of that path, then run again to
// completion (the email stage records outcomes a batch at a time: the
// first commit is its boundary): no notice mailed twice, none texted, every notice sent or
// in quarantine.

import (
	"testing"

	"scan/internal/ledger"
	"scan/internal/provider/twilio/twiliotest"
)

func TestEmailAfterSMSKillMatrix(t *testing.T) {
	t.Parallel()
	for _, fp := range []string{"before-claim", "after-claim-commit", "after-accepted:3", "after-outcome-commit"} {
		t.Run(fp, func(t *testing.T) {
			t.Parallel()
			f, tw, env := smsFixtureOf(t, "[sms, email]", "")
			if _, err := f.db.Exec(`UPDATE subscriptions SET phone = NULL`); err != nil {
				t.Fatal(err)
			}
			r := f.scan(f.env(append(env, "SCAN_FAILPOINT="+fp)...), "run", "--batch-size", "20")
			if !r.killed {
				t.Fatalf("fail point %s did not crash the pass: exit %d\n%s", fp, r.code, tail(r.stderr))
			}
			afterSMSCheck(t, f, tw, false)
			before := f.smtp.Total()
			s := f.mustRun(f.env(env...))
			sent, quarantined := afterSMSCheck(t, f, tw, true)
			t.Logf("%s: mailed %d before the rerun, %d after; sent %d, quarantined %d; rerun %+v", fp, before, f.smtp.Total(), sent, quarantined, s)
			if sent+quarantined != smsNotices || f.smtp.Total() > smsNotices {
				t.Fatalf("after the rerun: sent %d, quarantined %d, mailed %d", sent, quarantined, f.smtp.Total())
			}
			if fp == "before-claim" && (sent != smsNotices || before != 0) {
				t.Fatalf("killed before the claim: sent %d, mailed before %d", sent, before)
			}
		})
	}
}

// afterSMSCheck wants no notice mailed twice, none texted, every email
// row sent (mailed once) or claimed (mailed at most once), and no email
// row without its sms row failed; with final, every row has both.
func afterSMSCheck(t *testing.T, f *fixture, tw *twiliotest.Server, final bool) (sent, quarantined int) {
	t.Helper()
	if n := len(tw.Requests()); n != 0 {
		t.Errorf("texted %d rows with no phone", n)
	}
	got := f.received()
	for i := 1; i <= smsNotices; i++ {
		id := subID(i)
		n := got[f.msgID(id)]
		if n > 1 {
			t.Errorf("%s mailed %d times", id, n)
		}
		var rows []struct {
			Channel string       `db:"channel"`
			State   ledger.State `db:"state"`
		}
		if err := f.db.Select(&rows, `SELECT channel, state FROM notice_ledger WHERE subscription_id = $1`, id); err != nil {
			t.Fatal(err)
		}
		by := map[string]ledger.State{}
		for _, r := range rows {
			by[r.Channel] = r.State
		}
		email, mailed := by["email"]
		switch {
		case mailed && by["sms"] != ledger.Failed:
			t.Errorf("%s: an email row beside sms %q", id, by["sms"])
		case !mailed && final:
			t.Errorf("%s: no email row after a completed pass (%v)", id, by)
		case !mailed && n > 0:
			t.Errorf("%s: mailed without a claim", id)
		case email == ledger.Sent:
			sent++
			if n != 1 {
				t.Errorf("%s: sent, mailed %d times", id, n)
			}
		case email == ledger.Claimed:
			quarantined++
		case mailed:
			t.Errorf("%s: email row %s", id, email)
		}
	}
	return sent, quarantined
}
