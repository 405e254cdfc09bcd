package pace_test

import (
	"time"

	"errors"
	"math"
	"reflect"
	"testing"

	"scan/internal/pace"
)

// TestBucketCheck: zero means no limit, which a Dispatcher takes and a
// policy (mustLimit) refuses; nothing takes a negative or non-finite field.
func TestBucketCheck(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		b         pace.Bucket
		mustLimit bool
		field     string // "" when accepted
	}{
		{"zero, no limit", pace.Bucket{}, false, ""},
		{"zero, must limit", pace.Bucket{}, true, "per_second"},
		{"zero burst, must limit", pace.Bucket{PerSecond: 1}, true, "burst"},
		{"limited", pace.Bucket{PerSecond: 0.5, Burst: 1}, true, ""},
		{"negative rate", pace.Bucket{PerSecond: -1}, false, "per_second"},
		{"NaN", pace.Bucket{PerSecond: math.NaN(), Burst: 1}, true, "per_second"},
		{"infinite", pace.Bucket{PerSecond: math.Inf(1)}, false, "per_second"},
		{"negative burst", pace.Bucket{Burst: -1}, false, "burst"},
	} {
		err := tt.b.Check(tt.mustLimit)
		var be *pace.BucketError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: Check = %v, want nil", tt.name, err)
		case tt.field != "" && (!errors.As(err, &be) || be.Field != tt.field):
			t.Errorf("%s: Check = %v, want a BucketError on %s", tt.name, err, tt.field)
		}
	}
}

// TestLimitsShare: every bucket divided by the shards, a burst never below
// 1, an unlimited bucket still unlimited, domains keyed in lower case.
func TestLimitsShare(t *testing.T) {
	t.Parallel()
	l := pace.Limits{
		Default: pace.Bucket{PerSecond: 8, Burst: 8},
		Domains: map[string]pace.Bucket{"Gmail.com": {PerSecond: 20, Burst: 2}},
	}
	got := l.Share(4)
	want := pace.Limits{
		Default: pace.Bucket{PerSecond: 2, Burst: 2},
		Domains: map[string]pace.Bucket{"gmail.com": {PerSecond: 5, Burst: 1}},
		Global:  pace.Bucket{Burst: 1},
		SMS:     pace.Bucket{Burst: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Share(4) = %+v, want %+v", got, want)
	}
	if p := got.Pace("other.example"); p != 2 {
		t.Errorf("Pace = %v, want 2 (no global limit)", p)
	}
}

// A Rate reports nothing on its first reading, the current window's rate
// once a tenth of a window has passed, and keeps the last full window's
// rate while the next one is slower.
func TestRate(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	r := pace.Rate{Window: time.Second}
	for _, c := range []struct {
		at   time.Duration
		n    int
		want float64
	}{
		{0, 0, 0},
		{50 * time.Millisecond, 10, 0},      // under a tenth of the window
		{500 * time.Millisecond, 50, 100},   // 50 in 0.5 s
		{time.Second, 100, 100},             // a full window: 100/s kept
		{1500 * time.Millisecond, 110, 100}, // slower now (20/s): the last window's 100 holds
	} {
		if got := r.At(t0.Add(c.at), c.n); got != c.want {
			t.Errorf("at %v with %d: %v, want %v", c.at, c.n, got, c.want)
		}
	}
}

// TestLimited: only a global, default or domain bucket with a rate paces
// email; the sms bucket does not.
func TestLimited(t *testing.T) {
	t.Parallel()
	on := pace.Bucket{PerSecond: 1, Burst: 1}
	for _, tt := range []struct {
		name string
		l    pace.Limits
		want bool
	}{
		{"zero", pace.Limits{}, false},
		{"sms only", pace.Limits{SMS: on}, false},
		{"unlimited domain", pace.Limits{Domains: map[string]pace.Bucket{"example.com": {}}}, false},
		{"global", pace.Limits{Global: on}, true},
		{"default", pace.Limits{Default: on}, true},
		{"a domain", pace.Limits{Domains: map[string]pace.Bucket{"example.com": on}}, true},
	} {
		if got := tt.l.Limited(); got != tt.want {
			t.Errorf("%s: Limited() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
