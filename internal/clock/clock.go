// Package clock is the source of time of the parts that wait: the send
// Dispatcher (its buckets and queues), the scan pass's recorder (its
// batches, back-off and shutdown grace) and the schedule Loop (its
// firings).
// Production uses System; tests drive a fake (internal/send/sendtest, the
// schedule package's tests) so that they wait on signals, not on the wall
// clock.
package clock

import (
	"sync/atomic"
	"time"
)

// Clock is a source of time and of one-shot timers. A Clock must be safe
// for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a Timer that fires once d has passed; d <= 0 fires
	// at once.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer of a Clock, with the semantics of a
// *time.Timer since Go 1.23: C has room for one value, and after Stop or
// Reset returns no value sent before that call is received from C.
// A Timer is used by one goroutine at a time.
type Timer interface {
	// C returns the channel on which the Timer delivers the time it fired.
	C() <-chan time.Time
	// Stop prevents the Timer from firing. It returns true if the call
	// stops the Timer, false if it had already fired or been stopped.
	Stop() bool
	// Reset makes the Timer fire once d has passed from now, whether or
	// not it was running. It returns true if the Timer was running.
	Reset(d time.Duration) bool
}

// System is the Clock of the operating system: time.Now and
// time.NewTimer. Its zero value is ready to use and it is safe for
// concurrent use.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// NewTimer returns a Timer backed by time.NewTimer(d).
func (System) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time        { return t.t.C }
func (t systemTimer) Stop() bool                 { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// Shifted is a Clock moved to another instant: after StartAt(t) its Now
// reads t at the moment of the call and runs on from there with the
// underlying clock (its timers are the underlying clock's). Until then it
// reads as the underlying clock. A pass that evaluates windows at a --now
// other than the wall clock counts its durations on one (the sms sender's
// ValidityPeriod from the pass's now). Make it with NewShifted; it is
// safe for concurrent use.
type Shifted struct {
	Clock
	shift atomic.Int64 // nanoseconds
}

// NewShifted returns c unshifted; a nil c is System.
func NewShifted(c Clock) *Shifted {
	if c == nil {
		c = System{}
	}
	return &Shifted{Clock: c}
}

// StartAt shifts the clock so that it reads t now.
func (c *Shifted) StartAt(t time.Time) { c.shift.Store(int64(t.Sub(c.Clock.Now()))) }

// Now returns the underlying clock's time, shifted.
func (c *Shifted) Now() time.Time { return c.Clock.Now().Add(time.Duration(c.shift.Load())) }
