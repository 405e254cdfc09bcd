package pace_test

import (
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
