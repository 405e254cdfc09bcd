package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The durability scenario (issue 29, `-only durable`): what the first pass
// pays for its claims committing synchronously whatever the server's
// default, for the timeline check and for the second witness. The server
// is durable (synchronous_commit on), so forcing `on` changes no flush:
// what it adds is the claim's own transaction (BEGIN, the setting, COMMIT)
// per batch, and the witness's probe per claim.
//
// Variants, each a first pass over the same N due notices (ledger
// truncated between passes), interleaved over BENCH_DURABLE_ROUNDS rounds
// (default 5) so that the machine's load falls on each alike; the medians
// are compared:
//
//   - before: -scan-before, a binary built from the commit before issue 29
//     (no forced setting, no timeline check, no witness in the claim);
//     skipped when not given;
//   - durable: -scan, with notice_evidence_unmatched empty;
//   - witness: -scan, with BENCH_UNMATCHED (default 1M) events of unknown
//     keys kept in notice_evidence_unmatched (a table of them is swapped in
//     by renaming, so the other variants run against an empty one).
const (
	// UnmatchedFullCreate builds the 1M-event table once, with the same
	// columns and indexes as notice_evidence_unmatched; $1 events.
	UnmatchedFullCreate = `CREATE TABLE bench_unmatched_full (LIKE notice_evidence_unmatched INCLUDING ALL)`
	UnmatchedFullSeed   = `INSERT INTO bench_unmatched_full
    (key32, provider_id, attempt, kind, state, event, occurred_at, detail, recorded_at, recorded_by)
SELECT md5('unmatched' || i), 'p-' || i, 0, 'delivered', 'sent', 'Delivery', now(), NULL, now(), 'bench'
FROM generate_series(1, $1::int) i`
	UnmatchedFullAnalyze = `VACUUM ANALYZE bench_unmatched_full`
	// UnmatchedSwap exchanges the empty table and the full one.
	UnmatchedSwap = `
ALTER TABLE notice_evidence_unmatched RENAME TO bench_unmatched_tmp;
ALTER TABLE bench_unmatched_full RENAME TO notice_evidence_unmatched;
ALTER TABLE bench_unmatched_tmp RENAME TO bench_unmatched_full`
)

func (b *bench) durable(ctx context.Context) error {
	n := b.cfg.n
	total, due := population(n)
	rounds := envInt("BENCH_DURABLE_ROUNDS", 5)
	unmatched := envInt("BENCH_UNMATCHED", 1000000)
	db, err := b.database(ctx, "bench_durable")
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(b.log, "bench: durable: seeding %d subscriptions (%d due) and %d unmatched events\n", total, due, unmatched)
	if err := b.seedMix(ctx, db, total); err != nil {
		return err
	}
	for _, q := range []string{UnmatchedFullCreate, UnmatchedFullSeed, UnmatchedFullAnalyze} {
		args := []any{}
		if q == UnmatchedFullSeed {
			args = append(args, unmatched)
		}
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("durable: %w", err)
		}
	}
	policy, err := b.writePolicy("durable.yaml", policyThroughput)
	if err != nil {
		return err
	}
	outbox := filepath.Join(b.cfg.work, "outbox-durable")
	env := []string{"SCAN_CONFIG=" + policy, "SCAN_SENDER=outbox", "SCAN_OUTBOX_DIR=" + outbox}
	type variant struct {
		name, bin string
		full      bool
		walls     []time.Duration
		cpus      []time.Duration
	}
	vs := []*variant{{name: "durable", bin: b.cfg.scan}, {name: "witness", bin: b.cfg.scan, full: true}}
	if b.cfg.scanBefore != "" {
		vs = append([]*variant{{name: "before", bin: b.cfg.scanBefore}}, vs...)
	}
	for round := range rounds {
		for _, v := range vs {
			if _, err := db.ExecContext(ctx, LedgerTruncate); err != nil {
				return err
			}
			if err := os.RemoveAll(outbox); err != nil {
				return err
			}
			if v.full {
				if _, err := db.ExecContext(ctx, UnmatchedSwap); err != nil {
					return err
				}
			}
			saved := b.cfg.scan
			b.cfg.scan = v.bin
			r, err := b.scan(ctx, "bench_durable", "run", b.runArgs(b.cfg.batches[0]), env)
			b.cfg.scan = saved
			if v.full {
				if _, serr := db.ExecContext(ctx, UnmatchedSwap); serr != nil && err == nil {
					err = serr
				}
			}
			if err != nil {
				return err
			}
			if r.int("sent") != due {
				return fmt.Errorf("durable %s: sent %d, want %d", v.name, r.int("sent"), due)
			}
			v.walls, v.cpus = append(v.walls, r.wall), append(v.cpus, r.cpu+r.pgCPU)
			fmt.Fprintf(b.log, "bench: durable round %d %s: %.2f s, CPU %.2f s\n", round+1, v.name, r.wall.Seconds(), (r.cpu + r.pgCPU).Seconds())
		}
	}
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	base := vs[len(vs)-2] // durable
	pct := func(a, b time.Duration) string { return fmt.Sprintf("%+.1f%%", 100*(a.Seconds()/b.Seconds()-1)) }
	if len(vs) == 3 {
		before := vs[0]
		b.add(figure{fmt.Sprintf("synchronous claims + timeline check, durable server (N=%d, median of %d)", due, rounds),
			fmt.Sprintf("%.2f s (CPU %.2f s)", med(base.walls).Seconds(), med(base.cpus).Seconds()),
			fmt.Sprintf("%.2f s (CPU %.2f s) before issue 29", med(before.walls).Seconds(), med(before.cpus).Seconds()),
			fmt.Sprintf("%s wall, %s CPU", pct(med(base.walls), med(before.walls)), pct(med(base.cpus), med(before.cpus))), "at most +2%"})
	}
	w := vs[len(vs)-1]
	b.add(figure{fmt.Sprintf("second witness, %d unmatched events kept (N=%d, median of %d)", unmatched, due, rounds),
		fmt.Sprintf("%.2f s (CPU %.2f s)", med(w.walls).Seconds(), med(w.cpus).Seconds()),
		fmt.Sprintf("%.2f s (CPU %.2f s) with none", med(base.walls).Seconds(), med(base.cpus).Seconds()),
		fmt.Sprintf("%s wall, %s CPU", pct(med(w.walls), med(base.walls)), pct(med(w.cpus), med(base.cpus))), "at most +3%"})
	return nil
}

// envInt reads a positive integer from the environment, def when unset.
func envInt(name string, def int) int {
	var n int
	if v := os.Getenv(name); v != "" {
		if _, err := fmt.Sscan(v, &n); err == nil && n > 0 {
			return n
		}
	}
	return def
}
