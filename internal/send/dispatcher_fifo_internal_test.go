package send

import "testing"

// The fifo yields what it took in order, however pushes and pops
// interleave around its moves to the front, and zeroes each slot it pops.
func TestFifoOrderAndZeroing(t *testing.T) {
	t.Parallel()
	var q fifo[*int]
	vals := make([]int, 5000)
	in, out := 0, 0
	for round := range 400 {
		for range round%13 + 1 {
			vals[in] = in
			q.push(&vals[in])
			in++
		}
		for range round%11 + 1 {
			if q.len() == 0 {
				break
			}
			if got := *q.front(); *got != out {
				t.Fatalf("round %d: popped %d, want %d", round, *got, out)
			}
			h := q.head
			q.pop()
			if h < len(q.items) && q.items[h] != nil {
				t.Fatalf("round %d: slot %d kept after the pop", round, h)
			}
			out++
		}
		if q.len() != in-out {
			t.Fatalf("round %d: len %d, want %d", round, q.len(), in-out)
		}
		for i := range q.head {
			if q.items[i] != nil {
				t.Fatalf("round %d: popped slot %d not zeroed", round, i)
			}
		}
	}
}
