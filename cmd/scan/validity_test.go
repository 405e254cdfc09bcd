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
