package main

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/example/scan/internal/ledger"
	"github.com/example/scan/internal/policy"
	"github.com/example/scan/internal/scan"
)

// cmdSchedule runs passes in-process on a cron schedule, one at a time,
// for hosts without Kubernetes. A PostgreSQL advisory lock keeps two
// schedulers (on two hosts) from running passes at once. SIGTERM stops
// the pass in flight at its next batch boundary and exits.
//
// The expression is evaluated in UTC unless it starts with CRON_TZ=Zone
// (see nextFiring), as the policy's window check assumes. In a zone with
// DST, robfig/cron skips a daily time that falls in the spring-forward gap
// (CRON_TZ=America/New_York 30 2 * * * does not fire on the second Sunday
// of March: 48h between two passes) and fires twice a time in the repeated
// fall-back hour (30 1 * * * runs at 01:30 EDT and again at 01:30 EST). A
// second pass is harmless (it mints nothing); the skipped day is why the
// policy check measures the longest gap over a year, and why UTC, or a
// CRON_TZ time outside 01:00-03:00, is the safe choice.
func cmdSchedule(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "schedule", "[--cron EXPR]")
	var f runFlags
	f.register(fs, false)
	f.maxMint = -1
	expr := fs.String("cron", "", "cron expression (default: the policy's schedule); CRON_TZ=Zone prefix allowed")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("arguments", "schedule takes no arguments")
	}
	registerSecrets(e)
	log, err := newLogger(e)
	if err != nil {
		return err
	}
	ps, err := preparePass(e, fs, &f, log)
	if err != nil {
		return err
	}
	if *expr == "" {
		*expr = ps.pol.Schedule
	}
	sched, err := policy.ParseSchedule(*expr)
	if err != nil {
		return usagef("--cron", "%v", err)
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	enc := json.NewEncoder(e.stdout)
	for {
		next := nextFiring(sched, time.Now())
		log.Info().Time("next_pass", next).Str("cron", *expr).Msg("waiting for the next pass")
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			log.Info().Msg("scheduler stopped")
			return nil
		case <-timer.C:
		}
		sum, ran, err := schedulePass(ctx, e, db, ps, &f, log)
		if !ran {
			continue
		}
		_ = enc.Encode(sum)
		var ce *scan.ConfigError
		if errors.As(err, &ce) {
			return err
		}
		if err != nil && ctx.Err() == nil {
			log.Error().Err(err).Msg("pass failed; the next one will pick up where it left off")
		}
		if ctx.Err() != nil {
			log.Info().Int("sent", sum.Sent).Int("quarantine", sum.Quarantine).
				Msg("scheduler stopped: the sends in flight finished and were recorded; the rest of the pass is left to the next one")
			return nil
		}
	}
}

// nextFiring returns the schedule's next firing after now. robfig/cron
// evaluates an expression without CRON_TZ= in the location of the time it
// is given, so now is converted to UTC first: otherwise the host's TZ
// would silently decide when the passes run.
func nextFiring(s cron.Schedule, now time.Time) time.Time {
	return s.Next(now.UTC())
}

// schedulePass runs one pass if this scheduler can take the advisory lock
// that all schedulers on the database share; ran is false when it could
// not (another scheduler's pass is running, or the database is
// unreachable), and the pass is skipped until the next firing.
func schedulePass(ctx context.Context, e *env, db *sqlx.DB, ps *preparedPass, f *runFlags, log zerolog.Logger) (sum scan.Summary, ran bool, err error) {
	conn, err := db.Connx(ctx)
	if err != nil {
		log.Error().Err(err).Msg("cannot reach the database; skipping this pass")
		return sum, false, nil
	}
	defer conn.Close()
	ok, err := ledger.TryLockScheduler(ctx, conn)
	if err != nil {
		log.Error().Err(err).Msg("cannot take the scheduler lock; skipping this pass")
		return sum, false, nil
	}
	if !ok {
		log.Info().Msg("another scheduler's pass is running; skipping this pass")
		return sum, false, nil
	}
	defer func() {
		if uerr := ledger.UnlockScheduler(context.WithoutCancel(ctx), conn); uerr != nil {
			// A session that may still hold the lock must not go back to
			// the pool: discard it, which ends the session and the lock.
			log.Warn().Err(uerr).Msg("could not release the scheduler lock; closing its connection")
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	sender, err := ps.newSender()
	if err != nil {
		return sum, true, err
	}
	defer sender.Close()
	sc, obs, err := ps.newPass(ctx, e, db, sender, f, time.Now().UTC(), log, scan.Hooks{})
	if err != nil {
		return sum, true, err
	}
	obs.begin(ctx, e, sc)
	sum, err = sc.Run(ctx)
	obs.finish(ctx, sum, err)
	return sum, true, err
}
