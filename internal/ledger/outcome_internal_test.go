package ledger

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/notice"
	"scan/internal/pgtest"
)

// The outcome statement finds its rows by plain index scans and pairs them
// with the outcomes by a hash join, whatever PostgreSQL believes of the
// month. Here the month was just created (no statistics) and a pass has
// settled most of its claims, whose entries stay in the quarantine index
// until VACUUM: left to the planner, each batch scanned that index with a
// bitmap and looped over it once per outcome.
func TestOutcomePlanIsIndexScansAndAHashJoin(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	period := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	const n, settled = 4000, 3000
	cs := make([]Claim, n)
	for i := range cs {
		k := fmt.Sprintf("%064x", i+1)
		cs[i] = Claim{Key: k, Tuple: notice.Tuple{SubscriptionID: fmt.Sprintf("sub_%d", i), Kind: "renewal_notice_t72", PeriodStart: period},
			RenewsAt: at.Add(48 * time.Hour), WindowClosesAt: at.Add(24 * time.Hour), Domain: "example.com", MessageID: k[:32] + "@n.example.com"}
	}
	if won, err := Insert(ctx, db, ClaimOptions{State: Claimed, Now: at, RunID: "r"}, cs); err != nil || len(won) != n {
		t.Fatalf("claim: %d, %v", len(won), err)
	}
	var outs []Outcome
	for _, c := range cs[:settled] {
		outs = append(outs, Outcome{Key: c.Key, PeriodStart: period, State: Sent, SentAt: at, Attempts: 1})
	}
	if got, err := RecordOutcomes(ctx, db, "r", at, outs); err != nil || got != settled {
		t.Fatalf("record: %d, %v", got, err)
	}
	keys := make([]string, n-settled)
	same := func(v string) []string {
		out := make([]string, len(keys))
		for i := range out {
			out[i] = v
		}
		return out
	}
	for i, c := range cs[settled:] {
		keys[i] = c.Key
	}
	plan := func(hints bool) string {
		var lines []string
		err := WithTx(ctx, db, func(tx *sqlx.Tx) error {
			if hints {
				if _, err := tx.ExecContext(ctx, noticeOutcomePlan); err != nil {
					return err
				}
			}
			return tx.SelectContext(ctx, &lines, "EXPLAIN "+noticeRecordOutcome, pq.Array(keys), pq.Array(same("sent")),
				pq.Array(same(at.Format(tsLayout))), pq.Array(same("")), pq.Array(same("1")), pq.Array(same("")),
				"2026-12-01", "2027-01-01", "r", at, []byte{}, 1, pq.Array(same("smtp")), pq.Array(make([]int, len(keys))), pq.Array(make([]int, len(keys))))
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	got := plan(true)
	for _, bad := range []string{"Nested Loop", "Seq Scan", "Bitmap"} {
		if strings.Contains(got, bad) {
			t.Errorf("outcome plan has a %s:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "Hash Join") {
		t.Errorf("outcome plan has no hash join:\n%s", got)
	}
	if own := plan(false); !strings.Contains(own, "Bitmap") {
		t.Logf("this PostgreSQL no longer picks the bitmap scan here; the hints may be unneeded")
	}
}
