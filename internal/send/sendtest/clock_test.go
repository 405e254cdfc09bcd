package sendtest_test

import (
	"testing"
	"time"

	"scan/internal/send/sendtest"
)

var start = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

// received returns what t's channel holds, if anything, without waiting.
func received(c <-chan time.Time) (time.Time, bool) {
	select {
	case at := <-c:
		return at, true
	default:
		return time.Time{}, false
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	clk := sendtest.NewClock(start)
	if _, ok := clk.Next(); ok {
		t.Fatal("Next reports a timer before any")
	}
	late := clk.NewTimer(3 * time.Second)
	early := clk.NewTimer(time.Second)
	if at, ok := clk.Next(); !ok || !at.Equal(start.Add(time.Second)) {
		t.Fatalf("Next = %v %v, want start+1s", at, ok)
	}

	clk.Advance(999 * time.Millisecond)
	if _, ok := received(early.C()); ok {
		t.Fatal("a timer fired before its deadline")
	}
	clk.Advance(2001 * time.Millisecond) // to the later deadline
	if at, ok := received(early.C()); !ok || !at.Equal(start.Add(time.Second)) {
		t.Fatalf("early delivered %v %v, want start+1s", at, ok)
	}
	if at, ok := received(late.C()); !ok || !at.Equal(start.Add(3*time.Second)) {
		t.Fatalf("late delivered %v %v, want start+3s", at, ok)
	}
	if _, ok := clk.Next(); ok {
		t.Fatal("Next reports a fired timer")
	}
	if got := clk.Now(); !got.Equal(start.Add(3 * time.Second)) {
		t.Fatalf("Now = %v", got)
	}

	// Stop and Reset drop a value nobody received, as *time.Timer does.
	clk.Set(clk.Now()) // no move: nothing due
	early.Reset(time.Second)
	clk.Advance(time.Second)
	if early.Stop() {
		t.Fatal("Stop of a fired timer reports it was running")
	}
	if _, ok := received(early.C()); ok {
		t.Fatal("a value sent before Stop was received after it")
	}
	if late.Reset(time.Minute) {
		t.Fatal("Reset of a fired timer reports it was running")
	}
	if !late.Stop() {
		t.Fatal("Stop of a running timer reports it was not")
	}
	if _, ok := clk.Next(); ok {
		t.Fatal("Next reports a stopped timer")
	}

	// A deadline not in the future fires at once.
	now := clk.NewTimer(0)
	if at, ok := received(now.C()); !ok || !at.Equal(clk.Now()) {
		t.Fatalf("NewTimer(0) delivered %v %v", at, ok)
	}
}

func TestClockSetBackPanics(t *testing.T) {
	t.Parallel()
	clk := sendtest.NewClock(start)
	defer func() {
		if recover() == nil {
			t.Fatal("Set to an earlier time did not panic")
		}
	}()
	clk.Set(start.Add(-time.Nanosecond))
}
