package clock_test

import (
	"testing"
	"time"

	"scan/internal/clock"
)

// manual is a Clock that reads what the test set.
type manual struct{ now time.Time }

func (m *manual) Now() time.Time                     { return m.now }
func (m *manual) NewTimer(time.Duration) clock.Timer { panic("not used") }

// A Shifted clock reads the underlying clock until StartAt, then the
// instant given at that moment, running on with the underlying clock.
func TestShifted(t *testing.T) {
	t.Parallel()
	wall := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	m := &manual{now: wall}
	c := clock.NewShifted(m)
	if got := c.Now(); !got.Equal(wall) {
		t.Fatalf("before StartAt: %v, want %v", got, wall)
	}
	pass := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	c.StartAt(pass)
	if got := c.Now(); !got.Equal(pass) {
		t.Fatalf("at StartAt: %v, want %v", got, pass)
	}
	m.now = m.now.Add(90 * time.Second)
	if got, want := c.Now(), pass.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("90 s later: %v, want %v", got, want)
	}
	if _, ok := clock.NewShifted(nil).Clock.(clock.System); !ok {
		t.Error("NewShifted(nil) is not the system clock")
	}
}
