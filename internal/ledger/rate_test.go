package ledger_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

func rateTake(t *testing.T, db *sqlx.DB, now time.Time, asks ...ledger.RateAsk) map[string]ledger.RateGrant {
	t.Helper()
	out := map[string]ledger.RateGrant{}
	err := ledger.WithTx(context.Background(), db, func(tx *sqlx.Tx) error {
		gs, err := ledger.RateTake(context.Background(), tx, now, time.Second, asks)
		for _, g := range gs {
			out[g.Bucket] = g
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A bucket of 10/s, burst 3, leased one second ahead: its burst at once,
// then one slot every 100 ms up to a second ahead and none beyond; what a
// lease (a pass that then crashed) held is free again once its time has
// passed, with nothing to release.
func TestRateTakeKeepsTheBucket(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ask := func(n int) ledger.RateAsk {
		return ledger.RateAsk{Bucket: "domain:example.com", Want: n, PerSecond: 10, Burst: 3}
	}
	ms := func(d int) time.Time { return t0.Add(time.Duration(d) * time.Millisecond) }
	for _, step := range []struct {
		name        string
		at          time.Time
		want        int
		start, next time.Time
		granted     int
	}{
		{"fresh: the burst before now, then up to a second ahead", t0, 100, ms(-200), ms(1100), 13},
		{"full: nothing more within the second", t0, 5, ms(1100), ms(1100), 0},
		{"half a second on: what came into reach", ms(500), 3, ms(1100), ms(1400), 3},
		{"after a crash: the held slots passed by themselves", ms(10_000), 2, ms(9800), ms(10_000), 2},
		{"no more than asked", ms(10_000), 1, ms(10_000), ms(10_100), 1},
	} {
		g := rateTake(t, db, step.at, ask(step.want))["domain:example.com"]
		if g.Granted != step.granted || !g.Start.Equal(step.start) || !g.Next.Equal(step.next) {
			t.Errorf("%s: granted %d from %v, next %v; want %d from %v, next %v", step.name,
				g.Granted, g.Start.Sub(t0), g.Next.Sub(t0), step.granted, step.start.Sub(t0), step.next.Sub(t0))
		}
	}
	if g := rateTake(t, db, t0, ledger.RateAsk{Bucket: "x", Want: 0, PerSecond: 1, Burst: 1}); len(g) != 0 {
		t.Errorf("an ask of nothing was answered: %+v", g)
	}
}

// Passes leasing at once, each a domain bucket and the global one in an
// order of its own, never deadlock and never share a slot: each bucket's
// leases tile its time without overlap, and none reaches past its now
// plus a second.
func TestRateTakeConcurrentLeasesNeverOverlap(t *testing.T) {
	t.Parallel()
	db := setup(t)
	const passes, leases = 6, 15
	var mu sync.Mutex
	got := map[string][]ledger.RateGrant{}
	var wg sync.WaitGroup
	for p := range passes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 2))
			for k := range leases {
				now := t0.Add(time.Duration(k*100+rng.IntN(100)) * time.Millisecond)
				asks := []ledger.RateAsk{
					{Bucket: "domain:a.example", Want: 1 + rng.IntN(8), PerSecond: 10, Burst: 2},
					{Bucket: "global", Want: 1 + rng.IntN(8), PerSecond: 15, Burst: 1},
				}
				rng.Shuffle(len(asks), func(i, j int) { asks[i], asks[j] = asks[j], asks[i] })
				var gs []ledger.RateGrant
				err := ledger.WithTx(context.Background(), db, func(tx *sqlx.Tx) (err error) {
					gs, err = ledger.RateTake(context.Background(), tx, now, time.Second, asks)
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, g := range gs {
					if g.Granted > 0 && g.Next.After(now.Add(time.Second+100*time.Millisecond)) {
						t.Errorf("%s: a slot at %v leased at %v, more than a second ahead", g.Bucket, g.Next.Sub(t0), now.Sub(t0))
					}
					got[g.Bucket] = append(got[g.Bucket], g)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for bucket, gs := range got {
		gs = slices.DeleteFunc(gs, func(g ledger.RateGrant) bool { return g.Granted == 0 })
		slices.SortFunc(gs, func(a, b ledger.RateGrant) int { return a.Start.Compare(b.Start) })
		total := 0
		for i, g := range gs {
			total += g.Granted
			if i > 0 && g.Start.Before(gs[i-1].Next.Add(-time.Microsecond)) {
				t.Errorf("%s: a lease from %v overlaps one up to %v", bucket, g.Start.Sub(t0), gs[i-1].Next.Sub(t0))
			}
		}
		t.Logf("%s: %d leases, %d slots", bucket, len(gs), total)
		if total == 0 {
			t.Errorf("%s: nothing granted", bucket)
		}
	}
}

// A lease is one statement, so it needs no transaction of its own: passes
// leasing on the pool at once (each statement its own transaction), with
// buckets no lease has made yet, never share a slot either. Each round's
// buckets are new, so their rows are created by racing inserts.
func TestRateTakeOnThePoolNeverOverlaps(t *testing.T) {
	t.Parallel()
	db := setup(t)
	const passes, rounds = 6, 10
	type lease struct {
		now time.Time
		g   ledger.RateGrant
	}
	var mu sync.Mutex
	got := map[string][]lease{}
	var wg sync.WaitGroup
	for p := range passes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				asks := []ledger.RateAsk{
					{Bucket: fmt.Sprintf("domain:%d.example", r), Want: 4, PerSecond: 10, Burst: 2},
					{Bucket: fmt.Sprintf("global%d", r), Want: 3 + p%3, PerSecond: 20, Burst: 1},
				}
				if p%2 == 1 {
					asks[0], asks[1] = asks[1], asks[0]
				}
				now := t0.Add(time.Duration(p*10) * time.Millisecond)
				gs, err := ledger.RateTake(context.Background(), db, now, time.Second, asks)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, g := range gs {
					got[g.Bucket] = append(got[g.Bucket], lease{now, g})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != 2*rounds {
		t.Fatalf("%d buckets leased; want %d", len(got), 2*rounds)
	}
	for bucket, ls := range got {
		if len(ls) != passes {
			t.Errorf("%s: %d grants; want one a pass, %d", bucket, len(ls), passes)
		}
		ls = slices.DeleteFunc(ls, func(l lease) bool { return l.g.Granted == 0 })
		slices.SortFunc(ls, func(a, b lease) int { return a.g.Start.Compare(b.g.Start) })
		total := 0
		for i, l := range ls {
			total += l.g.Granted
			if l.g.Next.After(l.now.Add(time.Second + 100*time.Millisecond)) {
				t.Errorf("%s: a slot at %v leased at %v, more than a second ahead", bucket, l.g.Next.Sub(t0), l.now.Sub(t0))
			}
			if i > 0 && l.g.Start.Before(ls[i-1].g.Next.Add(-time.Microsecond)) {
				t.Errorf("%s: a lease from %v overlaps one up to %v", bucket, l.g.Start.Sub(t0), ls[i-1].g.Next.Sub(t0))
			}
		}
		if total == 0 {
			t.Errorf("%s: nothing granted", bucket)
		}
	}
}
