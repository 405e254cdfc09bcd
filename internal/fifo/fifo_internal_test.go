package fifo

import "testing"

// The queue yields what it took in order, however pushes and pops
// interleave around its moves to the front, and zeroes each slot it pops.
func TestQueueOrderAndZeroing(t *testing.T) {
	t.Parallel()
	var q Queue[*int]
	vals := make([]int, 5000)
	in, out := 0, 0
	for round := range 400 {
		for range round%13 + 1 {
			vals[in] = in
			q.Push(&vals[in])
			in++
		}
		for range round%11 + 1 {
			if q.Len() == 0 {
				break
			}
			if got := *q.Front(); *got != out {
				t.Fatalf("round %d: popped %d, want %d", round, *got, out)
			}
			h := q.head
			q.Pop()
			if h < len(q.items) && q.items[h] != nil {
				t.Fatalf("round %d: slot %d kept after the pop", round, h)
			}
			out++
		}
		if q.Len() != in-out {
			t.Fatalf("round %d: len %d, want %d", round, q.Len(), in-out)
		}
		for i := range q.head {
			if q.items[i] != nil {
				t.Fatalf("round %d: popped slot %d not zeroed", round, i)
			}
		}
	}
}

// Take hands over the oldest items and zeroes their slots; Release and
// Adopt pass the array on empty; Drain returns what is left in order.
func TestQueueTakeReleaseAdoptDrain(t *testing.T) {
	t.Parallel()
	vals := []int{0, 1, 2, 3, 4, 5}
	var q Queue[*int]
	for i := range vals {
		q.Push(&vals[i])
	}
	got := q.Take(nil, 4)
	for i, p := range got {
		if *p != i {
			t.Fatalf("took %d at %d", *p, i)
		}
	}
	for i := range q.head {
		if q.items[i] != nil {
			t.Fatalf("taken slot %d not zeroed", i)
		}
	}
	rest := q.Drain(nil)
	if len(rest) != 2 || *rest[0] != 4 || *rest[1] != 5 || q.Len() != 0 || q.Cap() != 0 {
		t.Fatalf("drained %d items, len %d, cap %d after", len(rest), q.Len(), q.Cap())
	}
	q.Push(&vals[0])
	q.Pop()
	buf := q.Release()
	if len(buf) != 0 || cap(buf) == 0 || q.Cap() != 0 {
		t.Fatalf("released len %d cap %d, queue cap %d", len(buf), cap(buf), q.Cap())
	}
	var other Queue[*int]
	other.Adopt(buf)
	if other.Cap() != cap(buf) || other.Len() != 0 {
		t.Fatalf("adopted cap %d len %d", other.Cap(), other.Len())
	}
}
