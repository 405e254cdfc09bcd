package ledgertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// Key is the notice key of claim i of Crashed: 64 hex characters, its
// number twice.
func Key(i int) string { return fmt.Sprintf("%032x%032x", i, i) }

// MessageID is the Message-ID (without angle brackets) of claim i of
// Crashed: the key's first 32 characters at n.example.com.
func MessageID(i int) string { return notice.MessageID(Key(i), "n.example.com") }

// Crashed migrates the ledger of db and claims n notices (keys Key(1) to
// Key(n), subscriptions sub_1 to sub_n, period 2026-12-01) at t0, as a
// pass of run "crashed" would have before it died: every one in
// quarantine, none with an outcome. It fails the test on any error.
func Crashed(t testing.TB, db *sqlx.DB, n int, t0 time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	cs := make([]ledger.Claim, n)
	for i := range cs {
		cs[i] = ledger.Claim{Key: Key(i + 1), Tuple: notice.Tuple{SubscriptionID: fmt.Sprintf("sub_%d", i+1), Kind: "renewal_notice_t72",
			PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}, RenewsAt: t0.Add(48 * time.Hour),
			WindowClosesAt: t0.Add(24 * time.Hour), Domain: "example.com", MessageID: MessageID(i + 1)}
	}
	if won, err := ledger.Insert(ctx, db, ledger.ClaimOptions{State: ledger.Claimed, Now: t0, RunID: "crashed"}, cs); err != nil || len(won) != n {
		t.Fatalf("claim %d: won %d, %v", n, len(won), err)
	}
}
