// Package sendtest provides a fake clock.Clock, so that tests drive a
// send.Dispatcher through time instead of waiting on the wall clock.
package sendtest

import (
	"sort"
	"sync"
	"time"

	"scan/internal/clock"
)

// Clock is a clock.Clock whose time moves only when told, by Set or
// Advance; each move fires, in order of deadline, the timers it reaches.
// Next reports the earliest armed timer, which is when the code under
// test next expects to be woken.
//
// Clock knows nothing of the goroutines that use it: a test moves it only
// once the code under test has done all it can at the current instant.
// With a Dispatcher that instant is synctest.Wait's return (testing/synctest):
// every goroutine of the bubble is blocked, so every notice handed out has
// been sent and answered, and the scheduler waits on its timer.
//
// Build one with NewClock. A Clock is safe for concurrent use.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	armed map[*timer]struct{}
}

var _ clock.Clock = (*Clock)(nil)

// NewClock returns a Clock that reads start until it is moved.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, armed: map[*timer]struct{}{}}
}

// Now returns the Clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a Timer that fires when the Clock reaches Now()+d, at
// once if d <= 0.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.arm(d)
	return t
}

// Next returns the earliest deadline of an armed timer, and false when no
// timer is armed.
func (c *Clock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for t := range c.armed {
		if at.IsZero() || t.at.Before(at) {
			at = t.at
		}
	}
	return at, !at.IsZero()
}

// Advance moves the Clock forward by d; see Set.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(c.now.Add(d))
}

// Set moves the Clock to at, which must not be before Now, and fires
// every armed timer whose deadline is at or before it, the earliest
// first. A timer delivers its deadline on its channel.
func (c *Clock) Set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(at)
}

func (c *Clock) set(at time.Time) {
	if at.Before(c.now) {
		panic("sendtest: Clock moved back from " + c.now.String() + " to " + at.String())
	}
	c.now = at
	var due []*timer
	for t := range c.armed {
		if !t.at.After(at) {
			due = append(due, t)
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.fire()
	}
}

// timer is a clock.Timer of a Clock; its fields are guarded by c.mu.
type timer struct {
	c  *Clock
	ch chan time.Time
	at time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.disarm()
}

func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.disarm()
	t.arm(d)
	return was
}

// arm sets the deadline d from now; d <= 0 fires at once.
func (t *timer) arm(d time.Duration) {
	t.at = t.c.now.Add(d)
	if d <= 0 {
		t.fire()
		return
	}
	t.c.armed[t] = struct{}{}
}

// disarm stops t and drops a value it delivered and nobody received, as
// a *time.Timer does since Go 1.23. It reports whether t was armed.
func (t *timer) disarm() bool {
	_, was := t.c.armed[t]
	delete(t.c.armed, t)
	select {
	case <-t.ch:
	default:
	}
	return was
}

func (t *timer) fire() {
	delete(t.c.armed, t)
	select {
	case t.ch <- t.at:
	default: // unreachable: disarm empties ch before each arm
	}
}
