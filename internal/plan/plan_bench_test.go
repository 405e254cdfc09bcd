package plan

import (
	"fmt"
	"testing"
	"time"

	"scan/internal/pace"
)

// bigCand is a candidate the size of the pass's (a claim and its notice,
// about 660 bytes), so that what the queues copy and allocate shows.
type bigCand struct {
	cand
	_ [640]byte
}

// BenchmarkOfferPick is the planner's cost a candidate in a steady pass:
// the reader fills the queues of 20 domains up to the planner's bound,
// the producer claims what Pick returns and the sender completes it. An
// op is one candidate offered (and, on the way, picked).
func BenchmarkOfferPick(b *testing.B) {
	const batch, domains = 1000, 20
	f := NewFlow()
	p := NewPlanner(f, pace.Limits{}, batch, 16,
		func(c bigCand) string { return c.key }, func(c bigCand) string { return c.domain })
	cands := make([]bigCand, 8*batch)
	for i := range cands {
		cands[i].cand = cand{key: fmt.Sprint(i), domain: fmt.Sprintf("d%d.example", i%domains)}
	}
	now := time.Unix(0, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if p.Full() {
			now = now.Add(time.Millisecond)
			for _, c := range p.Pick(now) {
				f.Claimed(c.domain, 1)
				f.Done(c.domain)
			}
		}
		p.Offer(cands[i%len(cands)])
	}
}

// The candidates of a domain come out in the order they went in, however
// the picks and offers interleave (the queue reuses its array: head
// index, moves to the front, spare arrays between domains).
func TestQueueKeepsOrderAcrossReuse(t *testing.T) {
	t.Parallel()
	f := NewFlow()
	p := newPlanner(f, pace.Limits{}, 7, 1)
	next := map[string]int{}  // the next index each domain offers
	taken := map[string]int{} // the next index each domain must yield
	now := time.Unix(0, 0)
	for round := range 300 {
		for k := range round%11 + 1 {
			d := fmt.Sprintf("d%d.test", (round+k)%3)
			p.Offer(newCand(d, next[d]))
			next[d]++
		}
		now = now.Add(time.Second)
		for _, c := range p.Pick(now) {
			if want := newCand(c.domain, taken[c.domain]); c != want {
				t.Fatalf("round %d: picked %v, want %v", round, c, want)
			}
			taken[c.domain]++
			f.Claimed(c.domain, 1)
			f.Done(c.domain)
		}
	}
	for _, c := range p.Drain() {
		if want := newCand(c.domain, taken[c.domain]); c != want {
			t.Fatalf("drained %v, want %v", c, want)
		}
		taken[c.domain]++
	}
	for d, n := range next {
		if taken[d] != n {
			t.Fatalf("%s: %d of %d candidates came out", d, taken[d], n)
		}
	}
}
