package send

import (
	"context"
	"fmt"
	"time"
)

// Budget leases send slots from token buckets that the Dispatcher shares
// with other processes: the fleet's rates, which bound the sum over every
// pass on one ledger (internal/budget keeps them in the ledger). A
// Dispatcher with a Budget sends a notice of a paced domain only in a slot
// the Budget granted it, no earlier than the slot's time and no later
// than slotLate after it (or after the lease, for a slot the bucket's
// burst put in the past); a slot missed is dropped, never used late, so
// that late sends of one process never bunch up with another's on time.
// Its own Limits still apply on top.
//
// The Dispatcher calls Lease from one goroutine at a time, never from its
// scheduler: a slow lease holds back no domain's slots already granted.
type Budget interface {
	// Paced reports whether sends to domain take slots from the budget;
	// a domain it does not pace is sent by the Dispatcher's Limits alone.
	Paced(domain string) bool
	// Lease asks for slots: asks[i].N of domain asks[i].Domain, as of
	// now. It returns at most one grant per ask; an ask without one got
	// nothing and may ask again at once. An error means no slot was
	// granted: the Dispatcher answers the notices still without a slot
	// with a Transient error wrapping it (ErrNotAttempted's sibling: they
	// were never handed to the Sender).
	Lease(ctx context.Context, now time.Time, asks []SlotAsk) ([]SlotGrant, error)
}

// SlotAsk asks a Budget for N send slots of a domain.
type SlotAsk struct {
	Domain string
	N      int
}

// SlotGrant is what a Budget leased of one domain.
type SlotGrant struct {
	Domain string
	// Slots are the granted send times, ascending: one send each, none
	// before its time.
	Slots []time.Time
	// Retry is when the domain may have slots again, when the grant
	// holds fewer than were asked; zero means at once.
	Retry time.Time
}

// slotLate is the latest a slot may be used after its time (or after its
// lease, if later): a process whose scheduler or workers fell behind drops
// its slot rather than send in another process's. Over any span of T, the
// fleet's sends of a bucket are then at most (T + slotLate) x its rate,
// plus its burst.
const slotLate = 250 * time.Millisecond

// leaseRetry is how long a domain waits to ask again after a lease that
// failed.
const leaseRetry = time.Second

// slot is one granted send slot.
type slot struct {
	at    time.Time // not before
	until time.Time // not after
}

// leaseReply is a lease's outcome, sent to the scheduler.
type leaseReply struct {
	asks   []SlotAsk
	grants []SlotGrant
	err    error
	at     time.Time // when the lease was asked for
}

// ErrNoBudget wraps a Budget's error in the Result of a notice that never
// had a slot.
var ErrNoBudget = fmt.Errorf("%w: no send slot from the fleet's budget", ErrNotAttempted)

// want notes whether dq, a paced domain, needs more slots than it has.
func (d *Dispatcher) want(dq *bucketQueue) {
	if dq.paced && len(dq.jobs) > len(dq.slots) {
		d.wanting[dq] = true
	} else {
		delete(d.wanting, dq)
	}
}

// hasSlot drops dq's slots that are too late to use and reports whether
// one is left.
func (d *Dispatcher) hasSlot(dq *bucketQueue, now time.Time) bool {
	i := 0
	for i < len(dq.slots) && dq.slots[i].until.Before(now) {
		i++
	}
	if i > 0 {
		dq.slots = dq.slots[i:]
		d.want(dq)
	}
	return len(dq.slots) > 0
}

// lease asks the Budget, in a goroutine of its own, for the slots every
// wanting domain lacks, unless a lease is in flight.
func (d *Dispatcher) lease(now time.Time) {
	if d.leasing || len(d.wanting) == 0 || d.cancelled {
		return
	}
	// No more slots than the workers can take before they are too late:
	// what they handed out over slotLate lately, a hand-out at least.
	room := max(d.handout, int(d.handRate.At(now, d.handed)*slotLate.Seconds()))
	var asks []SlotAsk
	for dq := range d.wanting {
		if dq.askAt.After(now) || room == 0 {
			continue
		}
		n := min(len(dq.jobs)-len(dq.slots), room)
		room -= n
		asks = append(asks, SlotAsk{Domain: dq.name, N: n})
	}
	if len(asks) == 0 {
		return
	}
	d.leasing = true
	go func() {
		g, err := d.budget.Lease(d.ctx, now, asks)
		d.leased <- leaseReply{asks: asks, grants: g, err: err, at: now}
	}()
}

// granted takes a lease's slots into their domains' queues; after an
// error, it answers the notices of the asking domains that have no slot.
func (d *Dispatcher) granted(r leaseReply, now time.Time) {
	d.leasing = false
	if r.err != nil {
		for _, a := range r.asks {
			dq := d.domains[a.Domain]
			dq.askAt = now.Add(leaseRetry)
			if d.cancelled || d.hasSlot(dq, now) || dq.index >= 0 {
				continue
			}
			for _, j := range dq.jobs {
				d.queued--
				d.finish(j, now, &Error{Class: Transient, Err: fmt.Errorf("%w: %w", ErrNoBudget, r.err)})
			}
			dq.jobs = nil
			d.want(dq)
		}
		return
	}
	got := make(map[string]SlotGrant, len(r.grants))
	for _, g := range r.grants {
		got[g.Domain] = g
	}
	for _, a := range r.asks {
		dq := d.domains[a.Domain]
		g := got[a.Domain]
		for _, at := range g.Slots {
			dq.slots = append(dq.slots, slot{at: at, until: later(at, r.at).Add(slotLate)})
		}
		dq.askAt = time.Time{}
		if len(g.Slots) < a.N {
			dq.askAt = g.Retry
		}
		d.want(dq)
		if dq.index < 0 && len(dq.jobs) > 0 && !d.cancelled {
			d.requeue(dq, now)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
