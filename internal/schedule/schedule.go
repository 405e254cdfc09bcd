// Package schedule runs passes in-process on a cron schedule, one at a
// time, for hosts without Kubernetes: a Loop waits for each firing of its
// schedule, takes a lock that every scheduler of one ledger shares, runs
// one pass and releases the lock. AdvisoryLock is that lock on
// PostgreSQL, a transaction-level advisory lock held by a transaction open
// across the pass, which survives PgBouncer's transaction pooling (its
// statements are ledger.SchedulerTryLock's: they take no row of the
// ledger).
//
// Time is the Loop's Clock, so that tests drive it; the expression is
// evaluated in UTC unless it starts with CRON_TZ=Zone (see Next).
//
// DST: in a zone with DST, robfig/cron skips a daily time that falls in
// the spring-forward gap (CRON_TZ=America/New_York 30 2 * * * does not
// fire on the second Sunday of March: 48h between two passes) and fires
// twice a time in the repeated fall-back hour (30 1 * * * runs at 01:30
// EDT and again at 01:30 EST). A second pass is harmless (it mints
// nothing); the skipped day is why the policy check measures the longest
// gap over a year, and why UTC, or a CRON_TZ time outside 01:00-03:00, is
// the safe choice.
package schedule

import (
	"context"
	"errors"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"scan/internal/clock"
)

// Locker is the lock that keeps two schedulers (on two hosts) from running
// passes at once.
type Locker interface {
	// TryLock takes the lock without waiting. On success it returns the
	// function that releases it, which the caller must call once. It
	// returns an error matching ErrHeld when another holder has the lock,
	// and one matching ErrUnreachable when the lock's home (the database)
	// could not be reached to ask.
	TryLock(ctx context.Context) (unlock func(), err error)
}

var (
	// ErrHeld is returned by Locker.TryLock when another scheduler holds
	// the lock.
	ErrHeld = errors.New("another scheduler holds the lock")
	// ErrUnreachable marks a Locker.TryLock error that happened before the
	// lock could be asked for.
	ErrUnreachable = errors.New("lock unreachable")
)

// Stop wraps an error of a pass that no later firing can fix (a bad
// configuration): RunPass returns Stop(err) to end Loop.Run with err.
func Stop(err error) error { return &stopError{err} }

type stopError struct{ err error }

func (s *stopError) Error() string { return s.err.Error() }
func (s *stopError) Unwrap() error { return s.err }

// Config configures a Loop. Schedule, Lock and RunPass are required.
type Config struct {
	// Schedule is the parsed cron expression (policy.ParseSchedule).
	Schedule cron.Schedule
	// Spec is the expression as the operator wrote it, for the logs.
	Spec string
	// Clock is the source of the firings' time and of the timer the loop
	// waits on; nil is clock.System.
	Clock clock.Clock
	// Lock is taken before each pass and released after it.
	Lock Locker
	// RunPass runs one pass at now (in UTC, read once when the lock was
	// taken). An error is logged and the loop goes on to the next firing,
	// unless it wraps Stop. When ctx ends during a pass, RunPass should
	// finish what is in flight and return; Run then returns nil.
	RunPass func(ctx context.Context, now time.Time) error
	// Log receives a line per firing: waiting, skipped, failed, stopped.
	Log zerolog.Logger
}

// Loop runs passes on a schedule; see New and Run. A Loop runs one pass
// at a time and is not meant to be Run twice concurrently.
type Loop struct {
	cfg Config
}

// New checks cfg and returns its Loop.
func New(cfg Config) (*Loop, error) {
	switch {
	case cfg.Schedule == nil:
		return nil, errors.New("schedule: Config.Schedule is required")
	case cfg.Lock == nil:
		return nil, errors.New("schedule: Config.Lock is required")
	case cfg.RunPass == nil:
		return nil, errors.New("schedule: Config.RunPass is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	return &Loop{cfg: cfg}, nil
}

// Next returns the schedule's next firing after now. robfig/cron
// evaluates an expression without CRON_TZ= in the location of the time it
// is given, so now is converted to UTC first: otherwise the host's TZ
// would silently decide when the passes run.
func Next(s cron.Schedule, now time.Time) time.Time {
	return s.Next(now.UTC())
}

// Run waits for each firing and runs a pass if it can take the lock;
// when it cannot (another scheduler's pass is running, or the database is
// unreachable) that firing is skipped. It returns nil when ctx ends,
// whether it was waiting or a pass was running (RunPass is then expected
// to have finished what was in flight), and the error of a pass that
// RunPass wrapped with Stop.
func (l *Loop) Run(ctx context.Context) error {
	log := l.cfg.Log
	for {
		now := l.cfg.Clock.Now()
		next := Next(l.cfg.Schedule, now)
		log.Info().Time("next_pass", next).Str("cron", l.cfg.Spec).Msg("waiting for the next pass")
		timer := l.cfg.Clock.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			timer.Stop()
			log.Info().Msg("scheduler stopped")
			return nil
		case <-timer.C():
		}
		ran, err := l.fire(ctx)
		if !ran {
			continue
		}
		if se := (*stopError)(nil); errors.As(err, &se) {
			return se.err
		}
		if err != nil && ctx.Err() == nil {
			log.Error().Err(err).Msg("pass failed; the next one will pick up where it left off")
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// fire runs one pass under the lock; ran is false when the lock could not
// be taken and the pass was skipped.
func (l *Loop) fire(ctx context.Context) (ran bool, err error) {
	log := l.cfg.Log
	passCtx, unlock, err := tryLock(ctx, l.cfg.Lock)
	switch {
	case errors.Is(err, ErrHeld):
		log.Info().Msg("another scheduler's pass is running; skipping this pass")
		return false, nil
	case errors.Is(err, ErrUnreachable):
		log.Error().Err(err).Msg("cannot reach the database; skipping this pass")
		return false, nil
	case err != nil:
		log.Error().Err(err).Msg("cannot take the scheduler lock; skipping this pass")
		return false, nil
	}
	defer unlock()
	return true, l.cfg.RunPass(passCtx, l.cfg.Clock.Now().UTC())
}

// ContextLocker is a Locker that can tell its holder that the lock was
// lost (AdvisoryLock): TryLockContext returns, with the unlock, a context
// derived from ctx that ends when the lock does. The Loop runs the pass
// under it, so that a pass whose lock is gone stops.
type ContextLocker interface {
	TryLockContext(ctx context.Context) (context.Context, func(), error)
}

// tryLock takes lock, with its context of the lock when it has one.
func tryLock(ctx context.Context, lock Locker) (context.Context, func(), error) {
	if cl, ok := lock.(ContextLocker); ok {
		return cl.TryLockContext(ctx)
	}
	unlock, err := lock.TryLock(ctx)
	return ctx, unlock, err
}
