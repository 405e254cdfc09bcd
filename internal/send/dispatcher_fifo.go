package send

// fifo is a first-in, first-out queue on one slice that it reuses: a pop
// moves a head index instead of slicing the front away, so that a push
// after pops fills the room they left rather than reallocating (and
// copying) the whole queue, as appending to a slice resliced from the
// front does once its capacity runs out.
type fifo[T any] struct {
	items []T
	head  int // items[:head] were popped (and zeroed)
}

func (q *fifo[T]) len() int { return len(q.items) - q.head }

// front returns the oldest item; the queue must not be empty.
func (q *fifo[T]) front() *T { return &q.items[q.head] }

// push adds v at the back. When the slice is full and at least half of
// it was popped, the rest moves to the front first: each item is moved at
// most once per pop of another, so a push costs O(1), amortized.
func (q *fifo[T]) push(v T) {
	if len(q.items) == cap(q.items) && q.head > 0 && 2*q.head >= len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, v)
}

// pop removes the oldest item, zeroing its slot so that nothing it
// references is kept alive; the queue must not be empty.
func (q *fifo[T]) pop() {
	var zero T
	q.items[q.head] = zero
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
}
