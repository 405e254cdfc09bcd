// Package plan decides when a pass claims: it reads ahead into bounded
// per-domain candidate queues and claims from them only what the pace will
// let the sender send within the claim horizon (see Flow and Planner).
package plan

import (
	"math"
	"scan/internal/fifo"
	"slices"
	"sync"
	"time"

	"scan/internal/pace"
)

// Flow control: a notice is claimed only shortly before it can be sent.
//
// Reading the source is harmless and claiming is a promise: a claim whose
// process dies before the send stays in quarantine until an operator
// settles it. So the pass reads ahead into bounded per-domain candidate
// queues (memory only: a crash loses nothing there) and claims from them,
// set-based, only what each domain's bucket (and the global one) will let
// it send within ClaimHorizon, and no more than about two horizons of what
// the sender was measured to deliver (at least minPerWorker notices per
// worker). What a SIGKILL can strand is therefore the notices claimed but
// not yet handed to the provider: at most the buckets' pace over the
// horizon, never a backlog.
//
// A domain whose candidate queue is full takes no more rows: the reader
// goes on past it, so that a slow domain's backlog early in source order
// never keeps a fast domain behind it waiting. The stream remembers where
// it first skipped a row and reads again from there once the skipped
// domains have room (the anti-join on the ledger makes rows claimed since
// then vanish from that re-read).
const (
	// ClaimHorizon is how far ahead of its send a notice is claimed.
	ClaimHorizon = time.Second
	// minPerWorker is the fewest claims per sender worker kept in flight
	// when no rate limit binds, so that every worker (and each pipelined
	// SMTP lane's look-ahead) has work.
	minPerWorker = 4
	// rateWindow is the window over which the sender's throughput is
	// measured.
	rateWindow = 500 * time.Millisecond
)

// Flow counts, per recipient domain, the notices claimed and handed to the
// dispatcher whose outcome has not come back yet. The producer reads it to
// size claims; the recorder calls done for every result. It is safe for
// concurrent use.
type Flow struct {
	mu          sync.Mutex
	outstanding map[string]int
	total       int
	completed   int
	// claims and recorded count every notice claimed and every outcome
	// committed: equal, everything claimed so far is recorded.
	claims, recorded int
	wake             chan struct{}
}

// NewFlow returns an empty Flow.
func NewFlow() *Flow {
	return &Flow{outstanding: map[string]int{}, wake: make(chan struct{}, 1)}
}

// Claimed adds n notices of domain in flight.
func (f *Flow) Claimed(domain string, n int) {
	f.mu.Lock()
	f.outstanding[domain] += n
	f.total += n
	f.claims += n
	f.mu.Unlock()
}

// Committed counts n outcomes committed and wakes the producer.
func (f *Flow) Committed(n int) {
	f.mu.Lock()
	f.recorded += n
	f.mu.Unlock()
	f.signal()
}

// AllRecorded reports whether every notice claimed so far has its outcome
// committed.
func (f *Flow) AllRecorded() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recorded >= f.claims
}

// Done takes one notice of domain out of flight and wakes the producer.
func (f *Flow) Done(domain string) {
	f.mu.Lock()
	if f.outstanding[domain] > 0 {
		f.outstanding[domain]--
		f.total--
	}
	if f.outstanding[domain] == 0 {
		delete(f.outstanding, domain)
	}
	f.completed++
	f.mu.Unlock()
	f.signal()
}

// Wake is signalled whenever an outcome comes back or is committed.
func (f *Flow) Wake() <-chan struct{} { return f.wake }

func (f *Flow) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// snapshot copies the counts for one planning step.
func (f *Flow) snapshot(into map[string]int) (total, completed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(into)
	for d, n := range f.outstanding {
		into[d] = n
	}
	return f.total, f.completed
}

// candidateQueue holds one domain's candidates read from the source and
// not yet claimed, sized by the domain's pace (pace.Limits.Pace). It is
// the planner's; the dispatcher's queue of claimed notices waiting on the
// domain's token bucket is send's bucketQueue.
type candidateQueue[T any] struct {
	name string
	// q holds the candidates, oldest first, on an array it reuses (a
	// candidate is large).
	q fifo.Queue[T]
	// limit is the most claims of this domain in flight at once (its pace
	// over the horizon); math.MaxInt when no rate limits it.
	limit int
	// size is the most candidates held; math.MaxInt when no rate limits
	// the domain (the reader then pauses instead of skipping).
	size   int
	inRing bool
}

// len returns how many candidates q holds.
func (q *candidateQueue[T]) len() int { return q.q.Len() }

// Planner owns the candidate queues and decides each claim. It belongs to
// the producer goroutine.
type Planner[T any] struct {
	key     func(T) string // the claim key: a candidate is queued once
	domain  func(T) string // the recipient domain it is paced by
	flow    *Flow
	limits  pace.Limits // the policy's, as the dispatcher has them (the fleet's budget shares them out)
	batch   int
	workers int
	maxHeld int // candidates held in memory at most
	queues  map[string]*candidateQueue[T]
	ring    []*candidateQueue[T] // domains with candidates, in turn order
	// spare holds the emptied arrays of drained queues (at most maxHeld
	// candidates of room in all), for the next queue that fills: the
	// domains take turns without allocating, and a pass over many
	// domains keeps no more than the planner's own bound.
	spare       [][]T
	spareRoom   int
	picked      []T // Pick's result, reused by the next Pick
	next        int // ring position the next claim starts at
	held        int // candidates in all queues
	keys        map[string]bool
	globalLimit int            // claims in flight at most by the global bucket; MaxInt if none
	est         pace.Rate      // completions a second, over rateWindow
	out         map[string]int // scratch for flow snapshots
}

// NewPlanner returns a planner of f's claims paced by limits; key and
// domain read a candidate's claim key and recipient domain.
func NewPlanner[T any](f *Flow, limits pace.Limits, batch, workers int, key, domain func(T) string) *Planner[T] {
	p := &Planner[T]{
		key: key, domain: domain, flow: f, limits: limits, batch: batch, workers: max(workers, 1),
		maxHeld: 2 * batch, queues: map[string]*candidateQueue[T]{}, keys: map[string]bool{},
		globalLimit: horizonLimit(limits.Global.PerSecond), out: map[string]int{}, est: pace.Rate{Window: rateWindow},
	}
	return p
}

// horizonLimit is how many notices a bucket of rate perSecond sends over
// the claim horizon; math.MaxInt for no limit (a zero rate, as
// pace.Bucket means it).
func horizonLimit(perSecond float64) int {
	if perSecond <= 0 {
		return math.MaxInt
	}
	return max(1, int(math.Ceil(perSecond*ClaimHorizon.Seconds())))
}

func (p *Planner[T]) queue(domain string) *candidateQueue[T] {
	q := p.queues[domain]
	if q == nil {
		limit := horizonLimit(p.limits.Pace(domain))
		size := math.MaxInt
		if limit != math.MaxInt {
			size = max(4*limit, 64)
		}
		q = &candidateQueue[T]{name: domain, limit: limit, size: size}
		p.queues[domain] = q
	}
	return q
}

// Full reports whether the reader must pause: memory holds maxHeld
// candidates.
func (p *Planner[T]) Full() bool { return p.held >= p.maxHeld }

// Admits reports whether domain's queue takes another candidate beside
// the pending ones already admitted but not yet offered.
func (p *Planner[T]) Admits(domain string, pending int) bool {
	q := p.queue(domain)
	return q.len()+pending < q.size
}

// Offer queues c, which admits accepted, unless it is already queued.
func (p *Planner[T]) Offer(c T) {
	if p.keys[p.key(c)] {
		return
	}
	q := p.queue(p.domain(c))
	if q.q.Cap() == 0 {
		if k := len(p.spare); k > 0 {
			q.q.Adopt(p.spare[k-1])
			p.spare = p.spare[:k-1]
			p.spareRoom -= q.q.Cap()
		}
	}
	q.q.Push(c)
	p.keys[p.key(c)] = true
	p.held++
	if !q.inRing {
		q.inRing = true
		p.ring = append(p.ring, q)
	}
}

// RoomFor reports whether domain's queue has drained to half: a stream
// that skipped its rows may read them again.
func (p *Planner[T]) RoomFor(domain string) bool {
	q := p.queues[domain]
	return q == nil || q.len() <= q.size/2
}

// Empty reports whether no candidate is held.
func (p *Planner[T]) Empty() bool { return p.held == 0 }

// totalLimit is the most claims in flight over all domains: the global
// bucket's horizon, and, so that a sender slower than the buckets does not
// have a backlog claimed ahead of it, twice what it delivered over the
// last horizon (at least minPerWorker per worker, at most two batches).
// Where the buckets bind, the sender delivers their pace and the second
// bound is twice what they allow: it binds only when the sender is the
// bottleneck.
func (p *Planner[T]) totalLimit(now time.Time, completed int) int {
	r := p.est.At(now, completed)
	n := int(math.Ceil(2 * r * ClaimHorizon.Seconds()))
	return min(p.globalLimit, min(max(n, minPerWorker*p.workers), 2*p.batch))
}

// Pick chooses the next claim: up to one batch of candidates across
// domains, each domain topped up to its horizon, the budget shared in
// equal turns (starting with a different domain each time) so that no
// domain starves when the total binds. It returns nothing while a claim
// would be too small to be worth a statement: until the total has half its
// limit free and some domain half of its own. What it returns is the
// planner's buffer, valid until the next Pick: the caller claims it and
// keeps none of it.
func (p *Planner[T]) Pick(now time.Time) []T {
	if p.held == 0 {
		return nil
	}
	inFlight, completed := p.flow.snapshot(p.out)
	limit := p.totalLimit(now, completed)
	budget := min(p.batch, limit-inFlight)
	if budget < max(1, min(p.batch, limit/2)) {
		return nil
	}
	type want struct {
		q *candidateQueue[T]
		n int
	}
	var active []want
	hungry := false
	for i := range p.ring {
		q := p.ring[(p.next+i)%len(p.ring)]
		n := q.len()
		if q.limit == math.MaxInt {
			hungry = true
		} else {
			free := q.limit - p.out[q.name]
			n = min(n, free)
			hungry = hungry || free >= max(1, q.limit/2)
		}
		if n > 0 {
			active = append(active, want{q, n})
		}
	}
	if len(active) == 0 || !hungry {
		return nil
	}
	p.next = (p.next + 1) % len(p.ring)
	clear(p.picked)                                          // the last pick's, which its caller is done with
	picked := slices.Grow(p.picked[:0], min(budget, p.held)) // sized once: a candidate is large
	for budget > 0 && len(active) > 0 {
		share := max(1, budget/len(active))
		kept := active[:0]
		for _, w := range active {
			n := min(share, w.n, budget)
			if n == 0 {
				break
			}
			picked = w.q.q.Take(picked, n)
			budget -= n
			if w.n -= n; w.n > 0 {
				kept = append(kept, w)
			}
		}
		active = kept
	}
	for _, c := range picked {
		delete(p.keys, p.key(c))
	}
	p.held -= len(picked)
	p.compact()
	p.picked = picked
	return picked
}

// compact drops drained domains from the ring.
func (p *Planner[T]) compact() {
	kept := p.ring[:0]
	for _, q := range p.ring {
		if q.len() > 0 {
			kept = append(kept, q)
			continue
		}
		q.inRing = false
		if buf := q.q.Release(); cap(buf) > 0 && p.spareRoom+cap(buf) <= p.maxHeld {
			p.spare = append(p.spare, buf)
			p.spareRoom += cap(buf)
		}
	}
	clear(p.ring[len(kept):])
	p.ring = kept
	if p.next >= len(p.ring) {
		p.next = 0
	}
}

// Drain removes and returns every held candidate (the pass is stopping).
func (p *Planner[T]) Drain() []T {
	var out []T
	for _, q := range p.ring {
		out = q.q.Drain(out)
		q.inRing = false
	}
	p.ring, p.held, p.next = nil, 0, 0
	clear(p.keys)
	return out
}
