package scan_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"scan/internal/clock"
	"scan/internal/ledger"
	"scan/internal/policy"
	"scan/internal/scan"
	"scan/internal/send/sendtest"
)

// armClock is a sendtest.Clock that signals on armed each time one of its
// timers is started, and remembers when each was set to fire, so that a
// test moves time only once the code under test waits on it. Several
// parts wait on the clock (the dispatcher's buckets, the recorder's
// batches), so a test waits for the deadline it means (armedAt).
type armClock struct {
	*sendtest.Clock
	armed chan struct{} // capacity 1: signals coalesce, armedAt says the rest

	mu sync.Mutex
	at map[time.Time]bool
}

func (c *armClock) signal(d time.Duration) {
	c.mu.Lock()
	if c.at == nil {
		c.at = map[time.Time]bool{}
	}
	c.at[c.Now().Add(d)] = true
	c.mu.Unlock()
	select {
	case c.armed <- struct{}{}:
	default:
	}
}

// armedAt reports whether a timer was ever set to fire at t.
func (c *armClock) armedAt(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at[t]
}

func (c *armClock) NewTimer(d time.Duration) clock.Timer {
	t := armTimer{c.Clock.NewTimer(d), c}
	c.signal(d)
	return t
}

type armTimer struct {
	clock.Timer
	c *armClock
}

func (t armTimer) Reset(d time.Duration) bool {
	was := t.Timer.Reset(d)
	t.c.signal(d)
	return was
}

// The pass hands its Clock to the dispatcher: with a domain bucket of one
// notice a second, the second notice waits until the injected clock has
// moved one second, however long that takes on the wall clock, and the
// waits and latencies the pass reports are the fake clock's.
func TestDispatcherFollowsThePassClock(t *testing.T) {
	e := setup(t)
	pol, err := policy.Parse(strings.NewReader(strings.Replace(testPolicy,
		"default: {per_second: 10000, burst: 1000}", "default: {per_second: 1, burst: 1}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	e.pol = pol
	e.insert(
		sub{id: "sub_clock_a", email: "a@clock.example", renewsIn: 48 * time.Hour},
		sub{id: "sub_clock_b", email: "b@clock.example", renewsIn: 48 * time.Hour},
	)

	clk := &armClock{Clock: sendtest.NewClock(now), armed: make(chan struct{}, 1)}
	type outcome struct{ toSend, waited time.Duration }
	var mu sync.Mutex
	var outcomes []outcome
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // a failed test does not leave the pass waiting
	type result struct {
		sum scan.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := e.pass(ctx, func(c *scan.Config) {
			c.Clock = clk
			c.Hooks.Outcome = func(state ledger.State, _ string, _, toSend, waited time.Duration) {
				if state != ledger.Sent {
					t.Errorf("outcome %s, want sent", state)
				}
				mu.Lock()
				outcomes = append(outcomes, outcome{toSend, waited})
				mu.Unlock()
			}
		})
		done <- result{sum, err}
	}()

	// The first notice takes the bucket's one token; the dispatcher then
	// waits on the injected clock for the next, due one second on.
	refill := now.Add(time.Second)
	for waiting := true; waiting; {
		select {
		case <-clk.armed:
			if clk.armedAt(refill) {
				clk.Set(refill)
				waiting = false
			}
		case r := <-done:
			t.Fatalf("the pass ended (%+v, %v) without waiting on the injected clock for the bucket", r.sum, r.err)
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.sum.Sent != 2 {
		t.Fatalf("sent %d, want 2", r.sum.Sent)
	}
	// Pass and dispatcher read one clock, which moved exactly once.
	if r.sum.DurationMS != 1000 {
		t.Errorf("duration %d ms, want 1000 (the injected clock's second)", r.sum.DurationMS)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[outcome]bool{{0, 0}: true, {time.Second, time.Second}: true}
	for _, o := range outcomes {
		if !want[o] {
			t.Errorf("claim-to-send %v, waited %v: want one notice sent at once and one after exactly 1s of the injected clock", o.toSend, o.waited)
		}
		delete(want, o)
	}
	if len(want) > 0 {
		t.Errorf("outcomes %+v, want one of each of {0 0} and {1s 1s}", outcomes)
	}
}
