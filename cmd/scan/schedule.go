package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/spf13/pflag"

	"scan/internal/job"
	"scan/internal/policy"
	"scan/internal/schedule"
)

// cmdSchedule runs passes in-process on a cron schedule, one at a time,
// for hosts without Kubernetes (internal/schedule: the loop, and the
// PostgreSQL advisory lock that keeps two schedulers on two hosts from
// running passes at once). It prints each pass's summary on stdout, like
// `scan run`. SIGTERM stops the pass in flight at its next batch boundary
// and exits 0; a configuration error of a pass ends it with exit 2, and a
// pass's refusal (restore or failover detected) with exit 4.
//
// The expression is evaluated in UTC unless it starts with CRON_TZ=Zone,
// as the policy's window check assumes; the schedule package says what
// DST does to a CRON_TZ time.
var scheduleCommand = command{use: "schedule", short: "run passes in-process on a cron schedule, for hosts without Kubernetes (--cron EXPR)",
	env: envPass, flags: scheduleFlags}

// scheduleFlags declares scan schedule's flags: scan run's, and --cron.
func scheduleFlags(fs *pflag.FlagSet) runFunc {
	var f runFlags
	f.register(fs, false)
	expr := fs.String("cron", "", "cron expression (default: the policy's schedule); CRON_TZ=Zone prefix allowed")
	return func(ctx context.Context, e *env, _ []string) error { return cmdSchedule(ctx, e, fs, &f, expr) }
}

func cmdSchedule(ctx context.Context, e *env, fs *pflag.FlagSet, f *runFlags, expr *string) error {
	ps, err := preparePass(e, fs, f)
	if err != nil {
		return err
	}
	if *expr == "" {
		*expr = ps.pol.Schedule
	}
	ps.job.Schedule = *expr // the quiet hours count on the passes to come
	sched, err := policy.ParseSchedule(*expr)
	if err != nil {
		return usagef("--cron", "%v", err)
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	warnAsyncStandbys(ctx, ps.log, db)
	enc := json.NewEncoder(e.stdout)
	log := ps.log
	loop, err := schedule.New(schedule.Config{
		Schedule: sched,
		Spec:     *expr,
		Lock:     schedule.NewAdvisoryLock(db, log),
		Log:      log,
		Clock:    e.clock,
		RunPass: func(ctx context.Context, now time.Time) error {
			sum, err := ps.job.Run(ctx, db, now)
			// Printed even for a pass that could not start, as an empty
			// summary, so that every firing that ran shows on stdout.
			_ = enc.Encode(sum)
			// A refusal (the ledger's database restored or failed over)
			// ends the scheduler with exit 4, as `scan run`: no later
			// firing can pass before `scan recover`.
			if job.Final(err) {
				return schedule.Stop(err)
			}
			if ctx.Err() != nil {
				log.Info().Int("sent", sum.Sent).Int("quarantine", sum.Quarantine).
					Msg("scheduler stopped: the sends in flight finished and were recorded; the rest of the pass is left to the next one")
			}
			return err
		},
	})
	if err != nil {
		return err
	}
	return loop.Run(ctx)
}
