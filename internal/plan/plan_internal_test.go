package plan

import (
	"fmt"
	"math"
	"testing"
	"time"

	"scan/internal/pace"
)

// cand is a test candidate: a claim key and its domain.
type cand struct{ key, domain string }

func newCand(domain string, i int) cand { return cand{fmt.Sprintf("%s-%06d", domain, i), domain} }

func newPlanner(f *Flow, limits pace.Limits, batch, workers int) *Planner[cand] {
	return NewPlanner(f, limits, batch, workers, func(c cand) string { return c.key }, func(c cand) string { return c.domain })
}

// claimAll simulates the producer: it marks what pick returns as in
// flight, per domain.
func claimAll(f *Flow, picked []cand) map[string]int {
	by := map[string]int{}
	for _, c := range picked {
		by[c.domain]++
		f.Claimed(c.domain, 1)
	}
	return by
}

// Each domain is claimed up to its pace over the horizon and no further,
// however long its queue; before the sender is measured, the total starts
// at minPerWorker per worker.
func TestPickTopsUpEachDomainToItsHorizon(t *testing.T) {
	t.Parallel()
	f := NewFlow()
	limits := pace.Limits{
		Default: pace.Bucket{PerSecond: 5, Burst: 5},
		Domains: map[string]pace.Bucket{"fast.test": {PerSecond: 400, Burst: 400}},
		Global:  pace.Bucket{PerSecond: 100000, Burst: 100000},
	}
	p := newPlanner(f, limits, 1000, 8)
	for i := range 2000 {
		p.Offer(newCand("slow.test", i))
		p.Offer(newCand("fast.test", i))
	}
	now := time.Unix(0, 0)
	got := claimAll(f, p.Pick(now))
	if got["slow.test"] != 5 || got["fast.test"] != minPerWorker*8-5 {
		t.Fatalf("first claim %v, want slow 5 (its horizon) and fast the rest of %d", got, minPerWorker*8)
	}
	if more := p.Pick(now); len(more) != 0 {
		t.Fatalf("claimed %d more with nothing sent", len(more))
	}
	// The fast domain sends at 400/s (4 every 10 ms), the slow one at 5/s:
	// within half a second the claims follow, and never pass either
	// domain's horizon.
	sentFast, sentSlow := 0.0, 0.0
	for i := range 100 {
		now = now.Add(10 * time.Millisecond)
		for sentFast += 4; sentFast >= 1 && f.outstanding["fast.test"] > 0; sentFast-- {
			f.Done("fast.test")
		}
		for sentSlow += 0.05; sentSlow >= 1 && f.outstanding["slow.test"] > 0; sentSlow-- {
			f.Done("slow.test")
		}
		claimAll(f, p.Pick(now))
		if f.outstanding["fast.test"] > 400 || f.outstanding["slow.test"] > 5 {
			t.Fatalf("step %d: in flight %v, over a horizon (fast 400, slow 5)", i, f.outstanding)
		}
		if i == 60 && f.outstanding["fast.test"] < 200 {
			t.Fatalf("after 0.6 s at 400/s only %d fast claims in flight: the claims do not follow the sender", f.outstanding["fast.test"])
		}
	}
}

// When the global bucket binds, every domain gets its turn: a thousand
// domains with one notice each behind a global 10/s are all claimed, each
// once, ten at a time.
func TestPickSharesTheGlobalBucketWithoutStarving(t *testing.T) {
	t.Parallel()
	f := NewFlow()
	limits := pace.Limits{Default: pace.Bucket{PerSecond: 5, Burst: 5}, Global: pace.Bucket{PerSecond: 10, Burst: 10}}
	p := newPlanner(f, limits, 1000, 8)
	// One domain with a deep backlog first, then 200 domains with one
	// notice each.
	for i := range 50 {
		p.Offer(newCand("big.test", i))
	}
	for d := range 200 {
		p.Offer(newCand(fmt.Sprintf("d%03d.test", d), 0))
	}
	seen := map[string]int{}
	now := time.Unix(0, 0)
	for step := 0; p.held > 0; step++ {
		if step > 1000 {
			t.Fatalf("no progress: %d held", p.held)
		}
		picked := p.Pick(now)
		if f.total > 10 {
			t.Fatalf("step %d: %d in flight, over the global horizon of 10", step, f.total)
		}
		for _, c := range picked {
			seen[c.domain]++
			f.Claimed(c.domain, 1)
		}
		// Everything in flight is sent before the next step.
		for _, c := range picked {
			f.Done(c.domain)
		}
		if step == 0 && len(picked) != 10 {
			t.Fatalf("first claim took %d, want the global horizon (10)", len(picked))
		}
		if step < 20 && seen["big.test"] > step+1 {
			t.Fatalf("after %d claims the backlogged domain had %d turns: it starves the others", step+1, seen["big.test"])
		}
	}
	if len(seen) != 201 || seen["big.test"] != 50 {
		t.Fatalf("claimed %d domains (big.test %d), want all 201 and all 50 of big.test", len(seen), seen["big.test"])
	}
}

// With no rate limit, claims in flight follow what the sender delivers:
// at least minPerWorker per worker, at most two batches.
func TestPickFollowsTheSenderWithoutRateLimits(t *testing.T) {
	t.Parallel()
	f := NewFlow()
	p := newPlanner(f, pace.Limits{}, 1000, 8)
	for i := range 4000 {
		p.Offer(newCand("any.test", i))
	}
	if !p.Full() {
		t.Fatalf("4000 candidates held with room for %d: the reader would not pause", p.maxHeld)
	}
	now := time.Unix(0, 0)
	first := len(p.Pick(now))
	if first != minPerWorker*8 {
		t.Fatalf("first claim %d, want %d before anything was measured", first, minPerWorker*8)
	}
	f.Claimed("any.test", first)
	// A fast sender: everything in flight completes every 10 ms, and the
	// reader keeps the queue full.
	next := 4000
	for range 100 {
		for ; !p.Full(); next++ {
			p.Offer(newCand("any.test", next))
		}
		now = now.Add(10 * time.Millisecond)
		for range f.total {
			f.Done("any.test")
		}
		f.Claimed("any.test", len(p.Pick(now)))
		if f.total > 2000 {
			t.Fatalf("%d in flight, over two batches", f.total)
		}
	}
	if f.total < 1000 {
		t.Fatalf("a fast sender gets %d in flight, want batches of about 1000", f.total)
	}
	// The sender stalls: claims stop at two batches in flight, and once
	// the measured rate has fallen, the limit is back at its floor.
	for i := range 100 {
		now = now.Add(10 * time.Millisecond)
		n := len(p.Pick(now))
		f.Claimed("any.test", n)
		if f.total > 2000 || (i > 2*int(rateWindow/(10*time.Millisecond)) && n > 0) {
			t.Fatalf("step %d of a stalled sender: claimed %d, %d in flight", i, n, f.total)
		}
	}
	if l := p.totalLimit(now, f.completed); l != minPerWorker*8 {
		t.Fatalf("limit %d after a second without a send, want the floor %d", l, minPerWorker*8)
	}
}

// A full domain queue turns rows away; it takes them again at half.
func TestAdmitsUpToTheDomainQueueSize(t *testing.T) {
	t.Parallel()
	f := NewFlow()
	p := newPlanner(f, pace.Limits{Default: pace.Bucket{PerSecond: 20, Burst: 20}}, 1000, 8)
	q := p.queue("slow.test")
	if q.limit != 20 || q.size != 80 {
		t.Fatalf("limit %d size %d, want 20 and 80", q.limit, q.size)
	}
	if !p.Admits("slow.test", 79) || p.Admits("slow.test", 80) {
		t.Fatal("a queue of 80 must admit 80 pending rows and no more")
	}
	for i := range q.size {
		p.Offer(newCand("slow.test", i))
	}
	p.Offer(newCand("slow.test", 3)) // already queued: no second copy
	if p.held != 80 || p.Admits("slow.test", 0) || p.RoomFor("slow.test") {
		t.Fatalf("%d held; a full queue admits a row, or says it has room", p.held)
	}
	if !p.Admits("fast.test", 0) || !p.RoomFor("other.test") {
		t.Fatal("another domain is refused")
	}
	p.Offer(newCand("fast.test", 0))
	p.Pick(time.Unix(0, 0)) // 20 slow, 1 fast
	if p.RoomFor("slow.test") {
		t.Fatalf("room with %d of 80 queued", q.len())
	}
	f.Claimed("slow.test", 20)
	for range 20 {
		f.Done("slow.test")
	}
	p.Pick(time.Unix(1, 0))
	if !p.RoomFor("slow.test") || q.len() != 40 {
		t.Fatalf("%d queued after two claims of 20: want 40 and room", q.len())
	}
}

func TestHorizonLimit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rate float64
		want int
	}{{0, math.MaxInt}, {0.1, 1}, {5, 5}, {20.5, 21}} {
		if got := horizonLimit(c.rate); got != c.want {
			t.Errorf("horizonLimit(%v) = %d, want %d", c.rate, got, c.want)
		}
	}
}
