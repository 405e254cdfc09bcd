package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// objectiveNotice is one notice of the objective's ledger: its window's
// close (relative to now), what became of its email and sms rows ("" no
// row, "sent", "failed", "missed") and when each channel's delivery
// occurred relative to the close (nil: no evidence).
type objectiveNotice struct {
	closes         time.Duration
	email, sms     string
	emailAt, smsAt *time.Duration
}

func after(d time.Duration) *time.Duration { return &d }

// The objective counts, per trailing period, the notices whose window
// closed in it and those reached before it closed: delivered by either
// channel in time, or (when the email sender cannot confirm delivery)
// accepted by email. A notice with an email and an sms row is one notice;
// open windows and windows closed before the longest period are not
// counted.
func TestObjectiveCountsClosedWindowsAndReached(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	now := t0.Add(10 * 24 * time.Hour)
	notices := map[string]objectiveNotice{
		"A delivered in time":       {closes: -2 * time.Hour, email: "sent", emailAt: after(-time.Hour)},
		"B accepted, no evidence":   {closes: -2 * time.Hour, email: "sent"},
		"C delivered after close":   {closes: -2 * time.Hour, email: "sent", emailAt: after(time.Hour)},
		"D bounced, sms delivered":  {closes: -30 * time.Hour, email: "failed", sms: "sent", smsAt: after(-2 * time.Hour)},
		"E missed":                  {closes: -30 * time.Hour, email: "missed"},
		"H sms accepted, no report": {closes: -30 * time.Hour, sms: "sent"},
		"F still open":              {closes: 5 * time.Hour, email: "sent", emailAt: after(-time.Hour)},
		"G closed 40 days ago":      {closes: -40 * 24 * time.Hour, email: "failed"},
	}
	i := 0
	for _, n := range notices {
		i++
		addObjectiveNotice(t, ctx, db, i, now.Add(n.closes), n)
	}

	type counts struct{ due, reached, delivered, accepted int }
	for _, tc := range []struct {
		confirms bool
		want     map[string]counts
	}{
		{true, map[string]counts{"1h": {}, "6h": {3, 1, 1, 3}, "1d": {3, 1, 1, 3}, "3d": {6, 2, 2, 5}, "30d": {6, 2, 2, 5}}},
		// Without delivery reports, an email accepted before its window
		// closed is reached; an sms still needs Twilio's delivered.
		{false, map[string]counts{"1h": {}, "6h": {3, 3, 1, 3}, "1d": {3, 3, 1, 3}, "3d": {6, 4, 2, 5}, "30d": {6, 4, 2, 5}}},
	} {
		got, err := ledger.Objective(ctx, db, now, tc.confirms, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ledger.ObjectivePeriods) {
			t.Fatalf("confirms=%v: %d periods, want %d: %+v", tc.confirms, len(got), len(ledger.ObjectivePeriods), got)
		}
		for j, c := range got {
			if c.Period != ledger.ObjectivePeriods[j].Name {
				t.Errorf("confirms=%v: period %d is %q, want %q", tc.confirms, j, c.Period, ledger.ObjectivePeriods[j].Name)
			}
			w := tc.want[c.Period]
			if g := (counts{c.Due, c.Reached, c.Delivered, c.Accepted}); g != w {
				t.Errorf("confirms=%v, period %s: (due, reached, delivered, accepted) = %v, want %v", tc.confirms, c.Period, g, w)
			}
		}
	}
}

// addObjectiveNotice puts notice i in the ledger: its email and sms rows
// with their outcomes and their delivered evidence.
func addObjectiveNotice(t *testing.T, ctx context.Context, db *sqlx.DB, i int, closes time.Time, n objectiveNotice) {
	t.Helper()
	for ch, spec := range map[string]struct {
		state string
		at    *time.Duration
	}{"email": {n.email, n.emailAt}, "sms": {n.sms, n.smsAt}} {
		if spec.state == "" {
			continue
		}
		k := key(i*10 + len(ch)) // email 5, sms 3: a key per channel
		c := ledger.Claim{Key: k, Tuple: notice.Tuple{SubscriptionID: fmt.Sprintf("sub_%d", i), Kind: "renewal_notice_t72",
			PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
			RenewsAt: closes.Add(24 * time.Hour), WindowClosesAt: closes, Domain: "example.com", MessageID: k[:32] + "@n.example.com"}
		o := ledger.ClaimOptions{State: ledger.Claimed, Now: closes.Add(-12 * time.Hour), RunID: "r", Channel: ch}
		if spec.state == "missed" {
			if _, err := ledger.RecordMissed(ctx, db, closes.Add(time.Hour), "r", []ledger.Claim{c}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := ledger.Insert(ctx, db, o, []ledger.Claim{c}); err != nil {
			t.Fatal(err)
		}
		out := ledger.Outcome{Key: k, State: ledger.State(spec.state), SentAt: closes.Add(-12 * time.Hour)}
		if _, err := ledger.RecordOutcomes(ctx, db, "r", closes.Add(-12*time.Hour), []ledger.Outcome{out}); err != nil {
			t.Fatal(err)
		}
		if spec.at == nil {
			continue
		}
		res, err := settle(ctx, db, "receive", closes.Add(*spec.at), []ledger.Settlement{
			{Key: k, To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered, At: closes.Add(*spec.at)}})
		if err != nil || res.Unknown != 0 {
			t.Fatalf("settle %s: %+v, %v", k, res, err)
		}
	}
}
