package send

import (
	"testing"
	"time"

	"golang.org/x/time/rate"

	"scan/internal/pace"
)

func TestDelay(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	spent := func(b pace.Bucket) *rate.Limiter {
		l := newLimiter(b)
		for l.AllowN(at, 1) {
		}
		return l
	}
	for _, tt := range []struct {
		name string
		l    *rate.Limiter
		want time.Duration
	}{
		{"no limit", newLimiter(pace.Bucket{}), 0},
		{"a token left", newLimiter(pace.Bucket{PerSecond: 2, Burst: 3}), 0},
		{"2/s spent", spent(pace.Bucket{PerSecond: 2, Burst: 1}), 500 * time.Millisecond},
		{"3/s spent, rounded up", spent(pace.Bucket{PerSecond: 3}), 333333334 * time.Nanosecond},
		{"too slow for a Duration", spent(pace.Bucket{PerSecond: 1e-12}), rate.InfDuration},
	} {
		if got := delay(tt.l, at); got != tt.want {
			t.Errorf("%s: delay = %v, want %v", tt.name, got, tt.want)
		}
	}
}
