package send

import (
	"math"
	"time"

	"golang.org/x/time/rate"

	"scan/internal/pace"
)

// The Dispatcher paces its sends with the token buckets of pace.Limits:
// newLimiter builds one from a pace.Bucket, delay says when it next has a
// token.

// newLimiter returns the token bucket of b, which Check accepted: its
// limit is rate.Inf (no limit) or a finite rate > 0, never 0.
func newLimiter(b pace.Bucket) *rate.Limiter {
	if b.PerSecond == 0 {
		return rate.NewLimiter(rate.Inf, 1)
	}
	return rate.NewLimiter(rate.Limit(b.PerSecond), max(b.Burst, 1))
}

// delay returns how long until l has a token at now; 0 if it has one.
// l comes from newLimiter, so its limit is rate.Inf or a finite rate > 0;
// a rate so slow that the wait would overflow a Duration waits
// rate.InfDuration, as the rate package itself does.
func delay(l *rate.Limiter, now time.Time) time.Duration {
	lim := l.Limit()
	if lim == rate.Inf {
		return 0
	}
	tokens := l.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	ns := math.Ceil((1 - tokens) / float64(lim) * float64(time.Second))
	if ns >= float64(rate.InfDuration) {
		return rate.InfDuration
	}
	return max(time.Duration(ns), time.Microsecond)
}
