package scan

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
// billing period (openFrom), and the closed-window pages by theirs
// (closedFrom), so that PostgreSQL prunes the past months when it plans
// each page: a ledger with years of history must not make every page of a
// pass walk them.
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
	src := newSource(`"subscriptions"`, 0, 1)
	src.prepare(map[string]bool{}, []string{`"renews_at"`})
	sel := selection{kind: "renewal_notice_t72", anchor: `"renews_at"`, open: 72 * time.Hour, close: 24 * time.Hour}
	from, err := src.openFrom(ctx, db, sel, now)
	if err != nil || from == nil || from.Format(time.DateOnly) != "2026-12-02" {
		t.Fatalf("openFrom = %v, %v", from, err)
	}
	if due, err := src.countDue(ctx, db, sel, now, "r", from); err != nil || due.Open != 20 {
		t.Fatalf("countDue = %+v, %v", due, err)
	}
	closed, err := src.closedFrom(ctx, db, sel, now)
	if err != nil || closed == nil || closed.Format(time.DateOnly) != "2026-12-01" {
		t.Fatalf("closedFrom = %v, %v", closed, err)
	}
	for _, c := range []struct {
		name  string
		query func(from *time.Time, after *string) (string, []any)
		from  *time.Time
	}{
		{"open", func(f *time.Time, a *string) (string, []any) { return src.openQuery(sel, now, f, a, 1000) }, from},
		{"closed", func(f *time.Time, a *string) (string, []any) { return src.closedQuery(sel, now, f, a, 1000) }, closed},
	} {
		plan := func(from *time.Time) string {
			after := "a"
			q, args := c.query(from, &after)
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
