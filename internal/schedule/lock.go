package schedule

import (
	"context"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
)

// AdvisoryLock is the Locker of every scheduler on one ledger database:
// PostgreSQL's transaction-level advisory lock (ledger.SchedulerTryLock),
// held by a transaction that stays open for the whole pass, on a
// connection of its own taken from the pool. A transaction, not a
// session: behind PgBouncer in transaction pooling, an open transaction
// keeps its server connection, where a session-level lock's connection
// would go to another client at the end of each statement (and the lock
// with it).
//
// A crashed holder does not block the others: its connection closes
// (PgBouncer then closes the server connection of a client gone in a
// transaction), the transaction ends and the lock with it. While the pass
// runs, a watchdog checks the transaction every WatchEvery; if it is gone
// (connection lost, transaction ended by the server), the pass's context
// is cancelled, so that it stops at its next batch boundary as it does on
// SIGTERM. Build one with NewAdvisoryLock; it is safe for concurrent use.
//
// A check that is only slow is not a lost lock. lib/pq closes the
// connection of a statement whose context ends, which ends the
// transaction and frees the lock: a check given no more than WatchEvery
// to answer lost the lock itself on a loaded host (a scheduler's pass
// then ran beside the one in flight). So a check waits AliveTimeout,
// far longer than WatchEvery, before it counts the lock as lost.
type AdvisoryLock struct {
	db  *sqlx.DB
	log zerolog.Logger
	// WatchEvery is how often the watchdog checks the lock's transaction;
	// NewAdvisoryLock sets 2s.
	WatchEvery time.Duration
	// AliveTimeout is how long a check may wait for the server's answer
	// before the lock counts as lost (its connection is then closed,
	// which ends the lock if it was not already gone); NewAdvisoryLock
	// sets 1m.
	AliveTimeout time.Duration
}

var _ Locker = (*AdvisoryLock)(nil)

// NewAdvisoryLock returns the scheduler lock on db. log receives the
// warning of a lock that could not be released or was lost.
func NewAdvisoryLock(db *sqlx.DB, log zerolog.Logger) *AdvisoryLock {
	return &AdvisoryLock{db: db, log: log, WatchEvery: 2 * time.Second, AliveTimeout: time.Minute}
}

// TryLock takes the lock; see Locker and TryLockContext.
func (l *AdvisoryLock) TryLock(ctx context.Context) (unlock func(), err error) {
	_, unlock, err = l.TryLockContext(ctx)
	return unlock, err
}

// TryLockContext takes the lock in a transaction of its own and returns,
// with the function that releases it, a context derived from ctx that is
// cancelled when the lock is lost: the pass runs under it. The release
// ends the transaction and returns the connection to the pool; if that
// fails, the connection is discarded instead, which ends the session and
// with it the lock.
func (l *AdvisoryLock) TryLockContext(ctx context.Context) (context.Context, func(), error) {
	conn, err := l.db.Connx(ctx)
	if err != nil {
		return nil, nil, unreachableError{err}
	}
	// The transaction outlives ctx: a pass stopped by SIGTERM still
	// finishes its sends in flight under the lock.
	tx, err := conn.BeginTxx(context.WithoutCancel(ctx), nil)
	if err != nil {
		conn.Close()
		return nil, nil, unreachableError{err}
	}
	ok, err := ledger.SchedulerTryLock(ctx, tx)
	if err != nil || !ok {
		_ = tx.Rollback()
		conn.Close()
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("scheduler lock: %w", ErrHeld)
	}
	held, lost := context.WithCancel(ctx)
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go l.watch(held, lost, tx, stopWatch, watched)
	return held, func() {
		close(stopWatch)
		<-watched
		lost()
		if rerr := tx.Rollback(); rerr != nil {
			// A session that may still hold the lock must not go back to
			// the pool: discard it.
			l.log.Warn().Err(rerr).Msg("could not release the scheduler lock; closing its connection")
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, nil
}

// watch checks the lock's transaction every WatchEvery until stop is
// closed, and cancels the pass (lost) when the transaction is gone.
func (l *AdvisoryLock) watch(held context.Context, lost context.CancelFunc, tx *sqlx.Tx, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	every, wait := l.WatchEvery, l.AliveTimeout
	if every <= 0 {
		every = 2 * time.Second
	}
	if wait <= 0 {
		wait = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(held), wait)
		err := ledger.SchedulerLockAlive(cctx, tx)
		cancel()
		if err != nil {
			l.log.Error().Err(err).Msg("the scheduler lock's transaction is gone: stopping the pass at its next batch boundary")
			lost()
			<-stop
			return
		}
	}
}

// unreachableError is a connection error, as the driver wrote it, that
// matches ErrUnreachable.
type unreachableError struct{ err error }

func (u unreachableError) Error() string   { return u.err.Error() }
func (u unreachableError) Unwrap() []error { return []error{ErrUnreachable, u.err} }
