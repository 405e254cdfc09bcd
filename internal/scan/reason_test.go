package scan_test

import (
	"context"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/scan"
	"scan/internal/smtptest"
)

func rowOf(t *testing.T, e *env, id string) ledger.Row {
	t.Helper()
	rows, err := ledger.BySubscription(context.Background(), e.db, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%s: %d ledger rows, want 1", id, len(rows))
	}
	return rows[0]
}

// A retry row whose subscription was cancelled before the next pass ends
// as a recorded no-op (cancelled, reason cancelled), is never sent, and
// does not turn missed when its window closes. A retry row re-claimed
// keeps its first attempt's claim time.
func TestRetryOfACancelledSubscriptionIsANoOp(t *testing.T) {
	t.Parallel()
	e := setup(t, smtptest.WithMode(smtptest.TempFailRcpt))
	e.insert(sub{id: "cancel_me", email: "a@x.com", renewsIn: 48 * time.Hour},
		sub{id: "keep_me", email: "b@x.com", renewsIn: 48 * time.Hour})
	if s := e.mustPass(); s.Retry != 2 {
		t.Fatalf("first pass = %+v", s)
	}
	first := rowOf(t, e, "keep_me")
	if first.FirstClaimedAt == nil || !first.FirstClaimedAt.Equal(now) {
		t.Fatalf("first_claimed_at = %v, want %s", first.FirstClaimedAt, now)
	}
	e.insert(sub{id: "cancel_me", email: "a@x.com", status: "cancelled", renewsIn: 48 * time.Hour})
	e.smtp.SetMode(smtptest.Accept)
	later := now.Add(time.Hour)
	s := e.mustPass(func(c *scan.Config) { c.Now = later })
	if s.Cancelled != 1 || s.Retried != 1 || s.Sent != 1 || s.Missed != 0 {
		t.Fatalf("second pass = %+v", s)
	}
	c := rowOf(t, e, "cancel_me")
	if c.State != ledger.Cancelled || c.Reason == nil || *c.Reason != "cancelled" {
		t.Fatalf("cancelled row: state %s, reason %v", c.State, c.Reason)
	}
	k := rowOf(t, e, "keep_me")
	if k.State != ledger.Sent || k.Attempts != 2 || !k.ClaimedAt.Equal(later) || k.FirstClaimedAt == nil || !k.FirstClaimedAt.Equal(now) {
		t.Fatalf("re-claimed row: state %s, attempts %d, claimed_at %s, first_claimed_at %v", k.State, k.Attempts, k.ClaimedAt, k.FirstClaimedAt)
	}
	// After the window closed: still cancelled, not missed.
	e.mustPass(func(c *scan.Config) { c.Now = now.Add(47 * time.Hour) })
	if got := rowOf(t, e, "cancel_me").State; got != ledger.Cancelled {
		t.Fatalf("after the window closed: %s, want cancelled", got)
	}
	if n := e.smtp.Count(msgID("cancel_me", 0)); n != 0 {
		t.Fatalf("cancelled notice received %d times", n)
	}
}

// Every ledger row keeps the rule and the zone its deadline used.
func TestLedgerKeepsTheRuleAndTheZone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	berlin := zone(t, "Europe/Berlin")
	insertDue(t, e, dueRow{"berlin", "Europe/Berlin", time.Date(2026, 12, 28, 10, 0, 0, 0, berlin)},
		dueRow{"nozone", "", time.Date(2026, 12, 28, 10, 0, 0, 0, berlin)})
	contentPass(t, e, mustPolicy(t, duePolicy(`{working_days_before: 3, at: "09:00", calendar: DE}`)), time.Date(2026, 12, 22, 9, 0, 0, 0, berlin))
	const rule = "09:00 on the 3rd working day before renews_at, calendar DE, weekend sat+sun; closes 1h0m0s before"
	for id, tz := range map[string]string{"berlin": "Europe/Berlin", "nozone": "Europe/Berlin"} {
		r := rowOf(t, e, id)
		if r.Rule == nil || *r.Rule != rule || r.TimeZone == nil || *r.TimeZone != tz {
			t.Errorf("%s: rule %v, time_zone %v; want %q, %q", id, deref(r.Rule), deref(r.TimeZone), rule, tz)
		}
	}
	e2 := setup(t)
	e2.insert(sub{id: "fixed", email: "a@x.com", renewsIn: 48 * time.Hour})
	e2.mustPass()
	if r := rowOf(t, e2, "fixed"); r.Rule == nil || *r.Rule != "3d..1d before renews_at" || deref(r.TimeZone) != "UTC" {
		t.Errorf("open_before kind: rule %q, time_zone %q", deref(r.Rule), deref(r.TimeZone))
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
