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

// BenchmarkClaimBatch1000Suppression1M claims batches of 1000 against a
// 1M-entry email suppression list (none of the claims' recipients on
// it, as in tools/bench's suppression scenario), four ways in turn
// within each iteration, so that the machine's drift falls on all three
// alike: without the probe (an empty list at the pass's start), with the
// probe in the claim statement (ClaimOptions.Suppression), and as the
// pass did before, one SuppressionMatch statement and then the claim;
// and, across a secret rotation, the probe with one previous secret's
// digest per claim too (NOTICE_KEY_SECRET_PREVIOUS). Each reports its ms
// a batch; the ratios are the probe's cost.
func BenchmarkClaimBatch1000Suppression1M(b *testing.B) {
	db := setup(b)
	db.MustExec(`INSERT INTO notice_suppression (channel, address_hmac, reason, source, created_at)
SELECT 'email', sha256(('bench-suppressed-' || g)::bytea), 'bench', 'import', now()
FROM generate_series(1, 1000000) g`)
	db.MustExec(`VACUUM ANALYZE notice_suppression`)
	db.MustExec(`CHECKPOINT`)
	ctx := context.Background()
	const batch = 1000
	n := 0
	next := func() []ledger.Claim {
		claims := make([]ledger.Claim, batch)
		for i := range claims {
			claims[i] = claimN(n)
			d := sha256.Sum256([]byte(claims[i].Key))
			claims[i].AddressHMAC = d[:]
			n++
		}
		return claims
	}
	probe := opt("bench")
	probe.Suppression = true
	ways := []func([]ledger.Claim) error{
		func(cs []ledger.Claim) error { _, err := ledger.Insert(ctx, db, opt("bench"), cs); return err },
		func(cs []ledger.Claim) error { _, err := ledger.Insert(ctx, db, probe, cs); return err },
		func(cs []ledger.Claim) error {
			ds := make([][]byte, len(cs))
			for i := range cs {
				ds[i] = cs[i].AddressHMAC
			}
			if _, err := ledger.SuppressionMatch(ctx, db, "email", ds); err != nil {
				return err
			}
			_, err := ledger.Insert(ctx, db, opt("bench"), cs)
			return err
		},
		// Across a secret rotation (issue 38): the probe also looks each
		// recipient up under one previous secret's digest (on the list
		// for none of them, as after the list has turned over).
		func(cs []ledger.Claim) error {
			for i := range cs {
				d := sha256.Sum256(append([]byte("previous|"), cs[i].Key...))
				cs[i].PreviousHMACs = [][]byte{d[:]}
			}
			_, err := ledger.Insert(ctx, db, probe, cs)
			return err
		},
	}
	var spent [4]time.Duration
	round := 0
	for b.Loop() {
		for j := range ways {
			w := (j + round) % len(ways) // each way first in turn
			cs := next()
			start := time.Now()
			if err := ways[w](cs); err != nil {
				b.Fatal(err)
			}
			spent[w] += time.Since(start)
		}
		round++
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(round) }
	b.ReportMetric(ms(spent[0]), "ms/none")
	b.ReportMetric(ms(spent[1]), "ms/in-claim")
	b.ReportMetric(ms(spent[2]), "ms/separate")
	b.ReportMetric(100*(spent[1].Seconds()/spent[0].Seconds()-1), "%in-claim")
	b.ReportMetric(100*(spent[2].Seconds()/spent[0].Seconds()-1), "%separate")
	b.ReportMetric(ms(spent[3]), "ms/in-claim+previous")
	b.ReportMetric(100*(spent[3].Seconds()/spent[0].Seconds()-1), "%in-claim+previous")
}
