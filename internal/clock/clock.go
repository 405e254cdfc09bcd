// Package clock is the source of time of the parts that wait: the send
// Dispatcher (its buckets and queues), the scan pass's recorder (its
// batches, back-off and shutdown grace) and the schedule Loop (its
// firings).
// Production uses System; tests drive a fake (internal/send/sendtest, the
// schedule package's tests) so that they wait on signals, not on the wall
// clock.
package clock

import "time"

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
