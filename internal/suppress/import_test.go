package suppress_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/pgtest"
	"scan/internal/suppress"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// An import adds its entries in few statements, each firing the summary
// trigger once (sql/0042): 60,000 entries in at most two transactions
// (batches of 1,000 were 60, each rewriting about 950 summary chunks).
// Every entry is listed and its bit set in the summary; importing the
// same export again adds nothing.
func TestImportInFewStatements(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	const n = 60_000
	var csv strings.Builder
	csv.WriteString("email\n")
	for i := range n {
		fmt.Fprintf(&csv, "user%d@example.com\n", i)
	}
	res, err := suppress.Read(strings.NewReader(csv.String()), "email", "imported", hasher(t))
	if err != nil || len(res.Entries) != n {
		t.Fatalf("read %d entries, %v", len(res.Entries), err)
	}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	added, err := suppress.Import(ctx, db, res.Entries, now)
	if err != nil || added != n {
		t.Fatalf("added %d, %v", added, err)
	}
	var rows, writers int
	if err := db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT xmin::text) FROM notice_suppression`).Scan(&rows, &writers); err != nil {
		t.Fatal(err)
	}
	if rows != n || writers > 2 {
		t.Fatalf("%d entries written by %d transactions; want %d by at most 2", rows, writers, n)
	}
	s, err := ledger.LoadSuppressionSummary(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Entries {
		if !s.Hits(e.Digest) {
			t.Fatalf("entry %x imported, its summary bit clear", e.Digest)
		}
	}
	if again, err := suppress.Import(ctx, db, res.Entries, now); err != nil || again != 0 {
		t.Fatalf("again: added %d, %v", again, err)
	}
}
