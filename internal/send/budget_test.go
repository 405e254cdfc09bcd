package send_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"scan/internal/pace"
	"scan/internal/send"
	"scan/internal/send/sendtest"
)

// slotBudget is a send.Budget of one paced domain whose slots, one each
// step, are granted no further than ahead of the lease's now, as
// internal/budget grants the ledger's. The ledger's own leases are tested
// against PostgreSQL in internal/ledger and internal/budget.
type slotBudget struct {
	mu     sync.Mutex
	next   time.Time
	step   time.Duration
	ahead  time.Duration
	err    error
	leases int
}

func (b *slotBudget) Paced(domain string) bool { return domain == "paced.example" }

func (b *slotBudget) Lease(_ context.Context, now time.Time, asks []send.SlotAsk) ([]send.SlotGrant, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leases++
	if b.err != nil {
		return nil, b.err
	}
	var out []send.SlotGrant
	for _, a := range asks {
		if a.Domain != "paced.example" {
			panic("a lease for an unpaced domain: " + a.Domain)
		}
		g := send.SlotGrant{Domain: a.Domain}
		t := b.next
		if t.Before(now) {
			t = now
		}
		for len(g.Slots) < a.N && !t.After(now.Add(b.ahead)) {
			g.Slots = append(g.Slots, t)
			t = t.Add(b.step)
		}
		b.next = t
		if len(g.Slots) < a.N {
			g.Retry = t.Add(-b.ahead)
		}
		out = append(out, g)
	}
	return out, nil
}

// A paced domain's notices go out each in its leased slot, never before,
// leased again as the budget's window moves on; a domain the budget does
// not pace goes out at once by the dispatcher's own buckets, never held
// back by the other's wait.
func TestDispatcherSendsInLeasedSlots(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ns []send.Notice
		for i := range 5 {
			ns = append(ns, notice(i, "paced.example"))
		}
		for i := range 3 {
			ns = append(ns, notice(i, "free.example"))
		}
		b := &slotBudget{next: epoch, step: 200 * time.Millisecond, ahead: 400 * time.Millisecond}
		rs := runOnClock(t, send.DispatcherConfig{
			Concurrency: 2,
			Limits:      pace.Limits{Default: pace.Bucket{PerSecond: 1000, Burst: 10}},
			Budget:      b,
		}, ns)
		want := map[string][]time.Duration{
			"paced.example": every(5, 200*time.Millisecond),
			"free.example":  every(3, 0),
		}
		if got := schedule(rs); !maps.EqualFunc(got, want, slices.Equal) {
			t.Errorf("hand-out offsets per domain:\n got %v\nwant %v", got, want)
		}
		if b.leases < 3 {
			t.Errorf("%d leases: want the window leased again as it moved (3 at least)", b.leases)
		}
	})
}

// A budget that cannot lease (the ledger unreachable) answers the paced
// domain's notices as not attempted, wrapping ErrNoBudget, so that the
// pass releases their claims; the unpaced domain is sent.
func TestDispatcherBudgetError(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		clk := sendtest.NewClock(epoch)
		d := newDispatcher(t, t.Context(), send.DispatcherConfig{
			Sender: fakeSender{fn: accept}, Renderer: newRenderer(t), Clock: clk,
			Budget: &slotBudget{err: errors.New("connection refused")},
		})
		results := collect(d)
		submitAll(t, d, []send.Notice{notice(1, "paced.example"), notice(2, "free.example"), notice(3, "paced.example")})
		d.Close()
		synctest.Wait()
		rs := <-results
		if len(rs) != 3 {
			t.Fatalf("%d results for 3 notices", len(rs))
		}
		for _, r := range rs {
			switch r.Notice.Domain {
			case "free.example":
				if r.Err != nil {
					t.Errorf("free.example: %v, want sent", r.Err)
				}
			default:
				if send.Classify(r.Err) != send.Transient || !errors.Is(r.Err, send.ErrNoBudget) ||
					!errors.Is(r.Err, send.ErrNotAttempted) || r.Attempts != 0 {
					t.Errorf("paced.example: %d attempts, %v; want not attempted for want of a slot", r.Attempts, r.Err)
				}
			}
		}
	})
}
