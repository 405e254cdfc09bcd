package send

import "scan/internal/clock"

// Clock is the Dispatcher's source of time: every reading of the time by
// its scheduler (when a notice was queued, handed out, answered; when a
// bucket has its next token) and the timer on which it waits for the
// earliest bucket to refill. The token buckets take the time as a
// parameter, so they follow the Clock too.
//
// A Clock must be safe for concurrent use. Tests drive a Dispatcher with
// a fake one (internal/send/sendtest); production uses SystemClock.
type Clock = clock.Clock

// Timer is a one-shot timer of a Clock (clock.Timer).
type Timer = clock.Timer

// SystemClock is the Clock of the operating system (clock.System).
type SystemClock = clock.System
