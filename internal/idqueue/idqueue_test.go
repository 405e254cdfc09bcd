package idqueue

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// Pages of at most n, in order, then done once closed and drained.
func TestNextPagesThenDone(t *testing.T) {
	q := New()
	q.Push("a", "b", "c")
	q.Push() // nothing: no wake-up needed
	q.Close()
	var got []string
	for {
		ids, done, err := q.Next(context.Background(), 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 2 {
			t.Fatalf("page of %d, want at most 2", len(ids))
		}
		got = append(got, ids...)
		if done {
			break
		}
	}
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("got %v", got)
	}
}

// A consumer waiting on an empty queue wakes for a Push from another
// goroutine; Push never blocks, even with nobody reading.
func TestNextWakesOnPush(t *testing.T) {
	q := New()
	got := make(chan []string)
	go func() {
		ids, _, _ := q.Next(context.Background(), 10)
		got <- ids
	}()
	for range 3 {
		q.Push("x") // the one-slot signal is full after the first: never blocks
	}
	if ids := <-got; len(ids) == 0 || ids[0] != "x" {
		t.Fatalf("woke with %v", ids)
	}
}

// An ended context ends the wait with its error.
func TestNextEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, done, err := New().Next(ctx, 1); !done || !errors.Is(err, context.Canceled) {
		t.Fatalf("done %v, err %v", done, err)
	}
}

// A nil Queue takes pushes and does nothing.
func TestNilQueue(t *testing.T) {
	var q *Queue
	q.Push("a")
}
