package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/pflag"

	"scan/internal/job"
	"scan/internal/policy"
	"scan/internal/scan"
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
	job.WarnAsyncStandbys(ctx, ps.log, db)
	enc := json.NewEncoder(e.stdout)
	loop, err := ps.job.Scheduler(db, sched, e.clock, func(sum scan.Summary) { _ = enc.Encode(sum) })
	if err != nil {
		return err
	}
	return loop.Run(ctx)
}
