package send_test

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"scan/internal/send"
)

// TestBucketCheck: zero means no limit, which a Dispatcher takes and a
// policy (mustLimit) refuses; nothing takes a negative or non-finite field.
func TestBucketCheck(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		b         send.Bucket
		mustLimit bool
		field     string // "" when accepted
	}{
		{"zero, no limit", send.Bucket{}, false, ""},
		{"zero, must limit", send.Bucket{}, true, "per_second"},
		{"zero burst, must limit", send.Bucket{PerSecond: 1}, true, "burst"},
		{"limited", send.Bucket{PerSecond: 0.5, Burst: 1}, true, ""},
		{"negative rate", send.Bucket{PerSecond: -1}, false, "per_second"},
		{"NaN", send.Bucket{PerSecond: math.NaN(), Burst: 1}, true, "per_second"},
		{"infinite", send.Bucket{PerSecond: math.Inf(1)}, false, "per_second"},
		{"negative burst", send.Bucket{Burst: -1}, false, "burst"},
	} {
		err := tt.b.Check(tt.mustLimit)
		var be *send.BucketError
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
	l := send.Limits{
		Default: send.Bucket{PerSecond: 8, Burst: 8},
		Domains: map[string]send.Bucket{"Gmail.com": {PerSecond: 20, Burst: 2}},
	}
	got := l.Share(4)
	want := send.Limits{
		Default: send.Bucket{PerSecond: 2, Burst: 2},
		Domains: map[string]send.Bucket{"gmail.com": {PerSecond: 5, Burst: 1}},
		Global:  send.Bucket{Burst: 1},
		SMS:     send.Bucket{Burst: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Share(4) = %+v, want %+v", got, want)
	}
	if p := got.Pace("other.example"); p != 2 {
		t.Errorf("Pace = %v, want 2 (no global limit)", p)
	}
}
