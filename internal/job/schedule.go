package job

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/robfig/cron/v3"

	"scan/internal/clock"
	"scan/internal/scan"
	"scan/internal/schedule"
)

// Scheduler is `scan schedule`'s loop: a pass of c (Run) at each firing
// of sched (c.Schedule as the operator wrote it), one at a time under
// the PostgreSQL advisory lock that keeps two schedulers on two hosts
// from running passes at once. Each firing's summary goes to print.
func (c *Config) Scheduler(db *sqlx.DB, sched cron.Schedule, clk clock.Clock, print func(scan.Summary)) (*schedule.Loop, error) {
	return schedule.New(schedule.Config{
		Schedule: sched,
		Spec:     c.Schedule,
		Lock:     schedule.NewAdvisoryLock(db, c.Log),
		Log:      c.Log,
		Clock:    clk,
		RunPass: func(ctx context.Context, now time.Time) error {
			sum, err := c.Run(ctx, db, now)
			// Printed even for a pass that could not start, as an empty
			// summary, so that every firing that ran shows on stdout.
			print(sum)
			// A refusal (the ledger's database restored or failed over)
			// ends the scheduler with exit 4, as `scan run`: no later
			// firing can pass before `scan recover`.
			if Final(err) {
				return schedule.Stop(err)
			}
			if ctx.Err() != nil {
				c.Log.Info().Int("sent", sum.Sent).Int("quarantine", sum.Quarantine).
					Msg("scheduler stopped: the sends in flight finished and were recorded; the rest of the pass is left to the next one")
			}
			return err
		},
	})
}
