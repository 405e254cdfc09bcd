package main

import (
	"strconv"
	"testing"
	"time"
)

// An sms cannot arrive after its window closed (issue 36): a pass run
// (--now) two hours before the window closes texts every notice with a
// ValidityPeriod no longer than the time left in the window, and not much
// shorter; a pass with less than Twilio's least validity left defers them
// and texts nothing.
func TestSMSValidityPeriodEndsWithTheWindow(t *testing.T) {
	t.Parallel()
	f, tw, env := smsFixtureOf(t, "[sms]", "")
	closes := f.renews.Add(-24 * time.Hour) // testPolicy's close_before
	late := closes.Add(-500 * time.Millisecond)
	if s := f.mustRun(f.env(env...), "--now", late.Format(time.RFC3339Nano)); s.Sent != 0 || s.Deferred != smsNotices || len(tw.Requests()) != 0 {
		t.Fatalf("with %v left: summary %+v, %d texts; want all deferred", closes.Sub(late), s, len(tw.Requests()))
	}
	now := closes.Add(-2 * time.Hour)
	s := f.mustRun(f.env(env...), "--now", now.Format(time.RFC3339))
	reqs := tw.Requests()
	if s.Sent != smsNotices || len(reqs) != smsNotices {
		t.Fatalf("summary %+v, %d texts", s, len(reqs))
	}
	for id, sender := range f.senders() {
		if sender != "twilio" {
			t.Errorf("%s: sender %q, want twilio", id, sender)
		}
	}
	left := closes.Sub(now)
	for _, r := range reqs {
		v, err := strconv.Atoi(r.ValidityPeriod)
		if err != nil {
			t.Fatalf("text to %s: ValidityPeriod %q", r.To, r.ValidityPeriod)
		}
		got := time.Duration(v) * time.Second
		if got > left || got < left-time.Minute {
			t.Errorf("text to %s: ValidityPeriod %v, the window had %v left", r.To, got, left)
		}
	}
}

// A malformed email with a phone is known the first night (issue 36): the
// email channel is unusable for that notice, like a missing address
// (recorded failed no_usable_address, no message), and the sms goes in
// the same, first pass.
func TestMalformedEmailTextedInTheFirstPass(t *testing.T) {
	t.Parallel()
	f, tw, env := smsFixtureOf(t, "[email, sms]", "email = 'user.example.com', ")
	s := f.mustRun(f.env(env...))
	if s.Sent != smsNotices || s.SMS != smsNotices || s.NoUsableAddress != smsNotices || f.smtp.Total() != 0 {
		t.Fatalf("summary %+v, SMTP got %d", s, f.smtp.Total())
	}
	sent, _ := smsCheck(t, f, tw, true)
	if sent != smsNotices {
		t.Fatalf("%d of %d texted", sent, smsNotices)
	}
	var emailRows []struct {
		State     string  `db:"state"`
		LastError *string `db:"last_error"`
	}
	if err := f.db.Select(&emailRows, `SELECT state, last_error FROM notice_ledger WHERE channel = 'email'`); err != nil {
		t.Fatal(err)
	}
	for _, r := range emailRows {
		if r.State != "failed" || r.LastError == nil || *r.LastError != "no_usable_address" {
			t.Errorf("email row %s (%v), want failed no_usable_address", r.State, r.LastError)
		}
	}
	if len(emailRows) != smsNotices {
		t.Fatalf("%d email rows", len(emailRows))
	}
}
