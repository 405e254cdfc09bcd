package subscription

import (
	"context"
	"strings"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/pgtest"
	"scan/sql/reference"
)

// The open-notice pages bound the ledger's side by the window's earliest
// billing period (PeriodFrom), and the closed-window pages by theirs
// (PeriodFrom of the closed window), so that PostgreSQL prunes the past months when it plans
// each page: a ledger with years of history must not make every page of a
// pass walk them. So do the count of the notices other runs handled and
// the progress bar's count (CountHandled and CountOpen read their own
// PeriodFrom; issue 39).
func TestSourcePagesPrunePastMonths(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, reference.Subscriptions); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	if _, err := db.ExecContext(ctx, `SELECT notice_ledger_ensure_partitions(ARRAY['2026-06-01', '2026-09-01', '2026-12-01']::date[])`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO subscriptions (id, email, renews_at, period_start)
		SELECT 's' || i, 'a@x.com', $1::timestamptz + i * interval '1 minute', '2026-12-02'
		FROM generate_series(1, 20) i`, now.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// And one whose window closed: the closed-window pages' subject.
	if _, err := db.ExecContext(ctx, `INSERT INTO subscriptions (id, email, renews_at, period_start)
		VALUES ('c1', 'c@x.com', $1, '2026-12-01')`, now.Add(12*time.Hour)); err != nil {
		t.Fatal(err)
	}
	src, err := Open(ctx, db, "subscriptions", Shard{}, []Anchor{{Kind: "renewal_notice_t72", Column: "renews_at"}})
	if err != nil {
		t.Fatal(err)
	}
	// The window 72h-24h before renews_at, at now.
	g := Group{Kind: "renewal_notice_t72", Anchor: "renews_at"}
	openLo, openHi, closedLo, closedHi := now.Add(24*time.Hour), now.Add(72*time.Hour), now, now.Add(24*time.Hour)
	from, err := src.PeriodFrom(ctx, db, g, openLo, openHi)
	if err != nil || from == nil || from.Format(time.DateOnly) != "2026-12-02" {
		t.Fatalf("openFrom = %v, %v", from, err)
	}
	if due, err := src.CountDue(ctx, db, g, openLo, openHi, "r", from); err != nil || due.Open != 20 {
		t.Fatalf("countDue = %+v, %v", due, err)
	}
	closed, err := src.PeriodFrom(ctx, db, g, closedLo, closedHi)
	if err != nil || closed == nil || closed.Format(time.DateOnly) != "2026-12-01" {
		t.Fatalf("closedFrom = %v, %v", closed, err)
	}
	for _, c := range []struct {
		name  string
		query func(from *time.Time, after *string) (string, []any, error)
		from  *time.Time
	}{
		{"open", func(f *time.Time, a *string) (string, []any, error) {
			return src.openQuery(g, openLo, openHi, f, a, 1000)
		}, from},
		{"closed", func(f *time.Time, a *string) (string, []any, error) {
			return src.closedQuery(g, closedLo, closedHi, f, a, 1000)
		}, closed},
		{"after sms", func(f *time.Time, a *string) (string, []any, error) {
			return src.afterSMSQuery(g, openLo, openHi, f, a, 1000)
		}, from},
		{"count open", func(f *time.Time, _ *string) (string, []any, error) {
			st, err := src.statements(g.Anchor)
			return st.countOpen, src.group(g, openLo, openHi, false, g.Kind, nil, dateParam(f)), err
		}, from},
		{"handled", func(f *time.Time, _ *string) (string, []any, error) {
			st, err := src.statements(g.Anchor)
			return st.countHandled, src.group(g, openLo, openHi, false, g.Kind, "r", dateParam(f)), err
		}, from},
	} {
		plan := func(from *time.Time) string {
			after := "a"
			q, args, err := c.query(from, &after)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			if err := db.SelectContext(ctx, &lines, "EXPLAIN "+q, args...); err != nil {
				t.Fatal(err)
			}
			return strings.Join(lines, "\n")
		}
		unbounded, bounded := plan(nil), plan(c.from)
		for _, month := range []string{"notice_ledger_p202606", "notice_ledger_p202609"} {
			if !strings.Contains(unbounded, month) {
				t.Fatalf("%s: the unbounded plan does not read %s, so this test proves nothing:\n%s", c.name, month, unbounded)
			}
			if strings.Contains(bounded, month) {
				t.Errorf("%s: the page's plan reads %s, before the window's earliest period:\n%s", c.name, month, bounded)
			}
		}
		if !strings.Contains(bounded, "notice_ledger_p202612") {
			t.Errorf("%s: the page's plan does not read the window's month:\n%s", c.name, bounded)
		}
	}
}

// The key sample looks each sampled subscription's rows up by a probe of
// the business key, and stops at its limit: never a hash of the window's
// month, whose size grows with the number due (issue 39).
func TestSampleKeysProbesTheBusinessKey(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, reference.Subscriptions); err != nil {
		t.Fatal(err)
	}
	// 5,000 due subscriptions, each with a notice in the window's month
	// and one in a past month, analyzed: with these statistics the join
	// this statement was before hashed the whole month.
	for _, q := range []string{
		`SELECT notice_ledger_ensure_partitions(ARRAY['2026-06-01', '2026-12-01']::date[])`,
		`INSERT INTO subscriptions (id, email, renews_at, period_start)
		 SELECT 's' || i, 'a@x.com', '2026-12-02 02:00+00'::timestamptz + i * interval '1 second', '2026-12-02'
		 FROM generate_series(1, 5000) i`,
		`INSERT INTO notice_ledger (notice_key, subscription_id, kind, period_start, revision, state, claimed_at, run_id)
		 SELECT encode(sha256(('k' || i || '|' || p)::bytea), 'hex'), 's' || i, 'renewal_notice_t72', p, 0, 'sent', '2026-11-30', 'r'
		 FROM generate_series(1, 5000) i, unnest(ARRAY['2026-06-02', '2026-12-02']::date[]) p`,
		`ANALYZE`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	src, err := Open(ctx, db, "subscriptions", Shard{}, []Anchor{{Kind: "renewal_notice_t72", Column: "renews_at"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	keys, err := src.SampleKeys(ctx, db, now, now.Add(72*time.Hour), 20)
	if err != nil || len(keys) != 20 {
		t.Fatalf("sampled %d keys, %v", len(keys), err)
	}
	var lines []string
	if err := db.SelectContext(ctx, &lines, "EXPLAIN "+src.sampleStmt, now, now.Add(72*time.Hour), 20, 1000); err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "Nested Loop") || strings.Contains(plan, "Hash") {
		t.Fatalf("the key sample is not a nested loop of probes:\n%s", plan)
	}
}
