package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// BenchmarkSettleOne is what `scan receive` does per single SNS
// notification: one transaction that settles one SES Delivery (key,
// provider id and Message-ID all named) of a notice the pass recorded
// sent, kept as evidence, with 5000 other claims in quarantine. Each op is
// one request: `go run ./tools/devpg -- go test -run '^$' -bench
// SettleOne ./internal/ledger` (add -durable for fsync'd commits).
func BenchmarkSettleOne(b *testing.B) {
	db := setup(b)
	ctx := context.Background()
	const sent, quarantined = 2000, 5000
	var claims []ledger.Claim
	for i := range sent + quarantined {
		claims = append(claims, claim(i, 0)) // keys of distinct first 32 characters, as real ones
	}
	for lo := 0; lo < len(claims); lo += 1000 {
		if _, err := ledger.Insert(ctx, db, opt("bench"), claims[lo:lo+1000]); err != nil {
			b.Fatal(err)
		}
	}
	var outs []ledger.Outcome
	for i := range sent {
		outs = append(outs, ledger.Outcome{Key: claims[i].Key, PeriodStart: claims[i].PeriodStart, State: ledger.Sent,
			SentAt: t0, ProviderID: fmt.Sprintf("ses-%d", i), Attempts: 1})
	}
	if _, err := ledger.RecordOutcomes(ctx, db, "bench", t0, outs); err != nil {
		b.Fatal(err)
	}
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c := claims[n%sent]
		s := ledger.Settlement{Key: c.Key, ProviderID: fmt.Sprintf("ses-%d", n%sent), MessageID: c.MessageID, To: ledger.Sent,
			Event: "ses:delivery", At: t0.Add(time.Duration(n+1) * time.Second), Kind: ledger.KindDelivered}
		n++
		err := ledger.WithTx(ctx, db, func(tx *sqlx.Tx) error {
			res, err := ledger.Settle(ctx, tx, "bench", t0, []ledger.Settlement{s})
			if err == nil && res.Each[0] != ledger.ResultRecorded {
				err = fmt.Errorf("result %s", res.Each[0])
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "requests/s")
}
