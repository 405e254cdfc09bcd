package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/example/scan/internal/ledger"
	"github.com/example/scan/internal/policy"
	"github.com/example/scan/internal/scan"
)

// cmdSchedule runs passes in-process on a cron schedule, one at a time,
// for hosts without Kubernetes. A PostgreSQL advisory lock keeps two
// schedulers (on two hosts) from running passes at once. SIGTERM stops
// the pass in flight at its next batch boundary and exits.
//
// robfig/cron evaluates the expression in UTC unless it starts with
// CRON_TZ=Zone. In a zone with DST a daily time inside the spring-forward
// gap (e.g. 02:30 America/New_York) does not exist that day; the policy's
// window check counts that longer gap, and UTC avoids it altogether.
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
		next := sched.Next(time.Now())
		log.Info().Time("next_pass", next).Str("cron", *expr).Msg("waiting for the next pass")
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			log.Info().Msg("scheduler stopped")
			return nil
		case <-timer.C:
		}
		conn, err := db.Connx(ctx)
		if err != nil {
			log.Error().Err(err).Msg("cannot reach the database; skipping this pass")
			continue
		}
		ok, err := ledger.TryLockScheduler(ctx, conn)
		if err != nil || !ok {
			conn.Close()
			log.Warn().Err(err).Msg("another scheduler holds the lock; skipping this pass")
			continue
		}
		sum, err := func() (scan.Summary, error) {
			sender, err := ps.newSender()
			if err != nil {
				return scan.Summary{}, err
			}
			defer sender.Close()
			now := time.Now().UTC()
			sc, err := scan.New(ctx, db, sender, ps.renderer, log.With().Int("shard", ps.shard).Logger(), scan.Config{
				Policy: ps.pol, Secret: ps.secret, Source: f.source, RunID: newRunID(now), Now: now, MaxMint: -1,
				Shard: ps.shard, Shards: ps.shards, BatchSize: f.batch, RedirectTo: ps.redirect,
			})
			if err != nil {
				return scan.Summary{}, err
			}
			return sc.Run(ctx)
		}()
		_ = ledger.UnlockScheduler(context.WithoutCancel(ctx), conn)
		conn.Close()
		_ = enc.Encode(sum)
		var ce *scan.ConfigError
		if errors.As(err, &ce) {
			return err
		}
		if err != nil && ctx.Err() == nil {
			log.Error().Err(err).Msg("pass failed; the next one will pick up where it left off")
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}
