// Package fifo is a first-in, first-out queue on one slice that it
// reuses: a pop moves a head index instead of slicing the front away, so
// that a push after pops fills the room they left rather than
// reallocating (and copying) the whole queue, as appending to a slice
// resliced from the front does once its capacity runs out. The
// dispatcher's results and the planner's candidates queue in it.
package fifo

// Queue is a FIFO of T. The zero value is an empty queue, ready to use.
// A Queue is not safe for concurrent use.
type Queue[T any] struct {
	items []T
	head  int // items[:head] were popped (and zeroed)
}

// Len returns how many items q holds.
func (q *Queue[T]) Len() int { return len(q.items) - q.head }

// Cap returns the room of q's array (0 when it has none).
func (q *Queue[T]) Cap() int { return cap(q.items) }

// Front returns the oldest item; q must not be empty.
func (q *Queue[T]) Front() *T { return &q.items[q.head] }

// Push adds v at the back. When the array is full and at least half of
// it was popped, the rest moves to the front first: each item is moved at
// most once per pop of another, so a push costs O(1), amortized.
func (q *Queue[T]) Push(v T) {
	if len(q.items) == cap(q.items) && q.head > 0 && 2*q.head >= len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, v)
}

// Pop removes the oldest item, zeroing its slot so that nothing it
// references is kept alive; q must not be empty.
func (q *Queue[T]) Pop() {
	var zero T
	q.items[q.head] = zero
	q.advance(1)
}

// Take appends the n oldest items to dst, removes them (zeroing their
// slots) and returns dst; q must hold at least n.
func (q *Queue[T]) Take(dst []T, n int) []T {
	taken := q.items[q.head : q.head+n]
	dst = append(dst, taken...)
	clear(taken)
	q.advance(n)
	return dst
}

func (q *Queue[T]) advance(n int) {
	if q.head += n; q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
}

// Adopt gives an empty q buf's array (its length is ignored) to fill.
func (q *Queue[T]) Adopt(buf []T) { q.items, q.head = buf[:0], 0 }

// Release empties q and returns its array, with length 0, for another
// queue's Adopt; q has no array after it. The items still held are
// zeroed first.
func (q *Queue[T]) Release() []T {
	clear(q.items)
	buf := q.items[:0]
	q.items, q.head = nil, 0
	return buf
}

// Drain appends every item q holds to dst, oldest first, and leaves q
// empty with no array.
func (q *Queue[T]) Drain(dst []T) []T {
	dst = append(dst, q.items[q.head:]...)
	q.items, q.head = nil, 0
	return dst
}
