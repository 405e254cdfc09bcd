package schedule

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"
)

// The statements of the scheduler's lock: a PostgreSQL session-level
// advisory lock, (736361, 1), that keeps two `scan schedule` processes (on
// two hosts) from running passes at once. Neither touches the ledger.
const (
	// schedulerTryLock takes the lock if it is free and says whether it
	// did; it never waits.
	schedulerTryLock = `SELECT pg_try_advisory_lock(736361, 1)`
	// schedulerUnlock releases the lock held by the session.
	schedulerUnlock = `SELECT pg_advisory_unlock(736361, 1)`
)

// AdvisoryLock is the Locker of every scheduler on one ledger database: a
// PostgreSQL session-level advisory lock (schedulerTryLock). The lock
// belongs to a session, so a taken lock keeps one connection of the pool
// until it is released. Build one with NewAdvisoryLock; it is safe
// for concurrent use.
type AdvisoryLock struct {
	db  *sqlx.DB
	log zerolog.Logger
}

var _ Locker = (*AdvisoryLock)(nil)

// NewAdvisoryLock returns the scheduler lock on db. log receives the
// warning of a lock that could not be released.
func NewAdvisoryLock(db *sqlx.DB, log zerolog.Logger) *AdvisoryLock {
	return &AdvisoryLock{db: db, log: log}
}

// TryLock takes the lock on a connection of its own; see Locker. The
// returned unlock releases it and returns the connection to the pool; if
// the release fails, the connection is discarded instead, which ends the
// session and with it the lock.
func (l *AdvisoryLock) TryLock(ctx context.Context) (unlock func(), err error) {
	conn, err := l.db.Connx(ctx)
	if err != nil {
		return nil, unreachableError{err}
	}
	ok, err := takeLock(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("scheduler lock: %w", ErrHeld)
	}
	return func() {
		// The release must happen even when ctx ended (SIGTERM during
		// the pass).
		if uerr := releaseLock(context.WithoutCancel(ctx), conn); uerr != nil {
			// A session that may still hold the lock must not go back to
			// the pool: discard it.
			l.log.Warn().Err(uerr).Msg("could not release the scheduler lock; closing its connection")
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, nil
}

// takeLock takes the scheduler's lock on conn and reports whether it got
// it. The lock lives as long as the connection's session, or until
// releaseLock.
func takeLock(ctx context.Context, conn *sqlx.Conn) (bool, error) {
	var ok bool
	if err := conn.GetContext(ctx, &ok, schedulerTryLock); err != nil {
		return false, fmt.Errorf("scheduler lock: %w", err)
	}
	return ok, nil
}

// releaseLock releases the scheduler's lock held by conn.
func releaseLock(ctx context.Context, conn *sqlx.Conn) error {
	var ok bool
	if err := conn.GetContext(ctx, &ok, schedulerUnlock); err != nil {
		return fmt.Errorf("scheduler unlock: %w", err)
	}
	return nil
}

// unreachableError is a connection error, as the driver wrote it, that
// matches ErrUnreachable.
type unreachableError struct{ err error }

func (u unreachableError) Error() string   { return u.err.Error() }
func (u unreachableError) Unwrap() []error { return []error{ErrUnreachable, u.err} }
