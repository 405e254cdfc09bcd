package scan

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/example/scan/internal/ledger"
	"github.com/example/scan/internal/pgtest"
	"github.com/example/scan/sql/reference"
)

// The open-notice pages bound the ledger's side by the window's earliest
// billing period (countDue's From), so that PostgreSQL prunes the past
// months when it plans each page: a ledger with years of history must not
// make every page of the first pass walk them.
func TestListOpenPrunesPastMonths(t *testing.T) {
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
	src := &source{rel: "subscriptions"}
	sel := selection{kind: "renewal_notice_t72", open: 72 * time.Hour, close: 24 * time.Hour}
	due, err := src.countDue(ctx, db, sel, now, "r")
	if err != nil {
		t.Fatal(err)
	}
	if due.Open != 20 || due.From == nil || due.From.Format(time.DateOnly) != "2026-12-02" {
		t.Fatalf("countDue = %+v", due)
	}
	plan := func(from *time.Time) string {
		after := "s1"
		q, args := src.openQuery(sel, now, from, &after)
		var lines []string
		if err := db.SelectContext(ctx, &lines, "EXPLAIN "+q, args...); err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	unbounded, bounded := plan(nil), plan(due.From)
	for _, month := range []string{"notice_ledger_p202606", "notice_ledger_p202609"} {
		if !strings.Contains(unbounded, month) {
			t.Fatalf("the unbounded plan does not read %s, so this test proves nothing:\n%s", month, unbounded)
		}
		if strings.Contains(bounded, month) {
			t.Errorf("the page's plan reads %s, before the window's earliest period:\n%s", month, bounded)
		}
	}
	if !strings.Contains(bounded, "notice_ledger_p202612") {
		t.Errorf("the page's plan does not read the window's month:\n%s", bounded)
	}
}
