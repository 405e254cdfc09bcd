package ledger_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// The claim and outcome statements, batch by batch, as a pass runs them:
// `make bench-go` (a durable server) or `go run ./tools/devpg -durable --
// go test -run '^$' -bench Claim ./internal/ledger`. Each op is one batch;
// rows/s is the figure to compare with docs/BENCHMARKS.md.

func benchClaims(b *testing.B, batch int) {
	db := setup(b)
	ctx := context.Background()
	claims := make([]ledger.Claim, batch)
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range claims {
			claims[i] = claimN(n)
			n++
		}
		won, err := ledger.Insert(ctx, db, opt("bench"), claims)
		if err != nil || len(won) != batch {
			b.Fatalf("claimed %d of %d: %v", len(won), batch, err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkClaimBatch1000(b *testing.B) { benchClaims(b, 1000) }
func BenchmarkClaimBatch5000(b *testing.B) { benchClaims(b, 5000) }

// BenchmarkClaimBatchConflicts is the claim of a re-run that the source's
// anti-join did not filter: every row is already in the ledger.
func BenchmarkClaimBatchConflicts(b *testing.B) {
	db := setup(b)
	ctx := context.Background()
	const batch = 1000
	claims := make([]ledger.Claim, batch)
	for i := range claims {
		claims[i] = claimN(i)
	}
	if _, err := ledger.Insert(ctx, db, opt("first"), claims); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		won, err := ledger.Insert(ctx, db, opt("again"), claims)
		if err != nil || len(won) != 0 {
			b.Fatalf("claimed %d: %v", len(won), err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkRecordOutcomes records batches of 1000 outcomes of claims made
// outside the timer.
func BenchmarkRecordOutcomes(b *testing.B) {
	db := setup(b)
	ctx := context.Background()
	const batch = 1000
	claims := make([]ledger.Claim, batch)
	outs := make([]ledger.Outcome, batch)
	n := 0
	sentAt := time.Date(2026, 11, 30, 2, 0, 1, 0, time.UTC)
	digest := sha256.Sum256([]byte("the message")) // stored with every outcome, as the pass does
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for i := range claims {
			claims[i] = claimN(n)
			outs[i] = ledger.Outcome{Key: claims[i].Key, State: ledger.Sent, SentAt: sentAt, ProviderID: "p", Attempts: 1, Digest: digest[:]}
			n++
		}
		if _, err := ledger.Insert(ctx, db, opt("bench"), claims); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if got, err := ledger.RecordOutcomes(ctx, db, "bench", sentAt, outs); err != nil || got != batch {
			b.Fatalf("recorded %d: %v", got, err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

// claimN is claim(i, 0) for any i, with keys that do not collide.
func claimN(i int) ledger.Claim {
	c := claim(i, 0)
	c.Key = fmt.Sprintf("%064x", i+1<<40)
	c.MessageID = c.Key[:32] + "@n.example.com"
	return c
}

// BenchmarkClaimBatch1000Witness1M is BenchmarkClaimBatch1000 with 1M
// events of unknown keys kept as the second witness
// (notice_evidence_unmatched), none of them the claims' own: what the
// claim statement's look-up of a batch's keys costs at that size.
func BenchmarkClaimBatch1000Witness1M(b *testing.B) {
	db := setup(b)
	db.MustExec(`INSERT INTO notice_evidence_unmatched
    (key32, provider_id, attempt, kind, state, event, occurred_at, detail, recorded_at, recorded_by)
SELECT md5('unmatched' || i), 'p-' || i, 0, 'delivered', 'sent', 'Delivery', now(), NULL, now(), 'bench'
FROM generate_series(1, 1000000) i`)
	db.MustExec(`VACUUM ANALYZE notice_evidence_unmatched`)
	ctx := context.Background()
	const batch = 1000
	claims := make([]ledger.Claim, batch)
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range claims {
			claims[i] = claimN(n)
			n++
		}
		won, err := ledger.Insert(ctx, db, opt("bench"), claims)
		if err != nil || len(won) != batch {
			b.Fatalf("claimed %d of %d: %v", len(won), batch, err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkDurablyOverhead is what forcing a synchronous commit adds to a
// claim batch on a server whose default is already on: its own
// transaction (BEGIN, the setting, COMMIT) around the statement, here
// around nothing.
func BenchmarkDurablyOverhead(b *testing.B) {
	db := setup(b)
	ctx := context.Background()
	for b.Loop() {
		if err := ledger.Durably(ctx, db, func(sqlx.ExtContext) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
