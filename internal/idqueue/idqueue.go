// Package idqueue owns the hand-off of ids from one stage of a pass to
// the next (scan's email stage hands the sms stage the subscription ids
// it failed): a producer that must never block on its consumer, and a
// consumer that reads a page of ids at a time until the producer ends.
package idqueue

import (
	"context"
	"sync"
)

// Queue is an unbounded list of ids under a mutex with a one-slot wake-up
// signal: Push never blocks. A nil *Queue takes nothing (no consumer).
type Queue struct {
	mu     sync.Mutex
	ids    []string
	closed bool
	wake   chan struct{}
}

// New returns an empty, open Queue.
func New() *Queue { return &Queue{wake: make(chan struct{}, 1)} }

// Push queues ids and wakes the consumer; on a nil Queue it does nothing.
func (q *Queue) Push(ids ...string) {
	if q == nil || len(ids) == 0 {
		return
	}
	q.mu.Lock()
	q.ids = append(q.ids, ids...)
	q.mu.Unlock()
	q.signal()
}

// Close says the producer has ended: nothing more comes.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default: // already signalled
	}
}

// Next waits until ids are queued or the producer has ended, and takes
// at most n of them; done is true once it has ended and nothing is left.
// It returns ctx's error (done true) if ctx ends first.
func (q *Queue) Next(ctx context.Context, n int) (ids []string, done bool, _ error) {
	for {
		q.mu.Lock()
		k := min(n, len(q.ids))
		ids, q.ids = q.ids[:k:k], q.ids[k:]
		closed := q.closed && len(q.ids) == 0
		q.mu.Unlock()
		if len(ids) > 0 || closed {
			return ids, closed && len(ids) == 0, nil
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil, true, ctx.Err()
		}
	}
}
