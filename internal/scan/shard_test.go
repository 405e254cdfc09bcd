package scan_test

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"scan/internal/message"
	"scan/internal/policy"
	"scan/internal/scan"
	"scan/internal/send"
)

// shardPass runs one shard's pass on its own SMTP connection pool; safe to
// call from any goroutine (it reports errors instead of failing t).
func shardPass(ctx context.Context, e *env, pol *policy.Policy, shard, shards int) (scan.Summary, error) {
	sender, err := send.NewSMTP(send.SMTPConfig{URL: e.smtp.URL(), Pool: 4, Timeout: 10 * time.Second})
	if err != nil {
		return scan.Summary{}, err
	}
	defer sender.Close()
	r, err := message.NewRenderer(message.RenderConfig{From: pol.From, MessageIDDomain: pol.MessageIDDomain, CancelURL: pol.CancelURL})
	if err != nil {
		return scan.Summary{}, err
	}
	sc, err := newPass(ctx, e.db, sender, r, zerolog.Nop(), scan.Config{
		Policy: pol, Secret: []byte(secret), RunID: fmt.Sprintf("shard-%d-of-%d", shard, shards), Now: now,
		Shard: shard, Shards: shards, BatchSize: 7,
		Retry: send.RetryPolicy{Attempts: 2, Backoff: time.Millisecond, MaxBackoff: time.Millisecond},
	})
	if err != nil {
		return scan.Summary{}, err
	}
	return sc.Run(ctx)
}

// shardOf is the partition the source query computes in SQL, in Go: the
// first 32 bits of md5(id), big-endian, modulo N.
func shardOf(id string, n int) int {
	sum := md5.Sum([]byte(id))
	return int(binary.BigEndian.Uint32(sum[:4]) % uint32(n))
}

// Four shards run concurrently: every eligible subscription is sent
// exactly once (counted at the SMTP server), each by the shard the stable
// md5 partition assigns it, and CountDue (the progress bar's total) of
// each shard is what that shard then sends.
func TestShardsCoverEverySubscriptionOnce(t *testing.T) {
	t.Parallel()
	const n, shards = 400, 4
	e := setup(t)
	for _, d := range []string{"gmail.com", "example.org", "yahoo.com", "bücher.example"} {
		_, err := e.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start)
			SELECT $1 || '-' || i, 'u' || i || '@' || $1, $3::timestamptz, '2026-12-01'
			FROM generate_series(1, $2) i`, d, n/4, now.Add(48*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	due := make([]int, shards)
	for i := range shards {
		sc, err := newPass(ctx, e.db, nil, nil, zerolog.Nop(), scan.Config{Policy: e.pol, Secret: []byte(secret), RunID: "count", Now: now, Shard: i, Shards: shards})
		if err != nil {
			t.Fatal(err)
		}
		if due[i], err = sc.CountDue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sums := make([]scan.Summary, shards)
	errs := make([]error, shards)
	var wg sync.WaitGroup
	for i := range shards {
		wg.Go(func() { sums[i], errs[i] = shardPass(ctx, e, e.pol, i, shards) })
	}
	wg.Wait()
	total := 0
	for i := range shards {
		if errs[i] != nil {
			t.Fatalf("shard %d: %v", i, errs[i])
		}
		if sums[i].Sent != due[i] || sums[i].Minted != due[i] {
			t.Errorf("shard %d: CountDue %d, minted %d, sent %d", i, due[i], sums[i].Minted, sums[i].Sent)
		}
		if sums[i].Sent == 0 || sums[i].Sent == n {
			t.Errorf("shard %d sent %d of %d: not a partition", i, sums[i].Sent, n)
		}
		total += sums[i].Sent
	}
	if total != n || e.smtp.Total() != n {
		t.Fatalf("shards sent %d, server read %d; want %d", total, e.smtp.Total(), n)
	}
	for _, m := range e.smtp.Messages() {
		if c := e.smtp.Count(m.MessageID); c != 1 {
			t.Errorf("Message-ID %s received %d times", m.MessageID, c)
		}
	}
	var rows []struct {
		ID    string `db:"subscription_id"`
		RunID string `db:"run_id"`
	}
	if err := e.db.Select(&rows, `SELECT subscription_id, run_id FROM notice_ledger`); err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d ledger rows, want %d", len(rows), n)
	}
	for _, r := range rows {
		if want := fmt.Sprintf("shard-%d-of-%d", shardOf(r.ID, shards), shards); r.RunID != want {
			t.Errorf("%s claimed by %s, want %s (md5 partition)", r.ID, r.RunID, want)
		}
	}
}

// Each of N shards paces at 1/N of the policy's rates, so the fleet keeps
// the policy: with refills of one token per thousands of seconds, a shard
// sends exactly its share of the burst and then waits. The pass is then
// stopped (as SIGTERM would) and sent exactly that many.
func TestShardRateIsOneNth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		rate           string
		shards, wantAt int
	}{
		{"domain bucket, 1 shard", "default: {per_second: 0.0001, burst: 8}\n  global: {per_second: 1000, burst: 1000}", 1, 8},
		{"domain bucket, 4 shards", "default: {per_second: 0.0001, burst: 8}\n  global: {per_second: 1000, burst: 1000}", 4, 2},
		{"global bucket, 4 shards", "default: {per_second: 1000, burst: 1000}\n  global: {per_second: 0.0001, burst: 12}", 4, 3},
		{"named domain, 4 shards", "default: {per_second: 1000, burst: 1000}\n  domains:\n    example.com: {per_second: 0.0001, burst: 20}\n  global: {per_second: 1000, burst: 1000}", 4, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.many(200, "example.com")
			pol, err := policy.Parse(strings.NewReader(strings.Replace(testPolicy,
				"default: {per_second: 10000, burst: 1000}\n  global: {per_second: 100000, burst: 10000}", tc.rate, 1)))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type out struct {
				sum scan.Summary
				err error
			}
			done := make(chan out, 1)
			go func() {
				s, err := shardPass(ctx, e, pol, 0, tc.shards)
				done <- out{s, err}
			}()
			wctx, wcancel := context.WithTimeout(ctx, time.Minute)
			defer wcancel()
			if err := e.smtp.Wait(wctx, tc.wantAt); err != nil {
				t.Fatal(err)
			}
			cancel()
			res := <-done
			if res.sum.Sent != tc.wantAt || e.smtp.Total() != tc.wantAt {
				t.Errorf("sent %d, server read %d; want the shard's share of the burst, %d (pass error: %v)", res.sum.Sent, e.smtp.Total(), tc.wantAt, res.err)
			}
		})
	}
}
