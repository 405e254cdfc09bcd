package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The proof scenario (issue 37, `-only proof`): what keeping each
// notice's message (proof of notice, notice_message) costs.
//
//   - storage: the kept message per notice after a first pass of
//     -proof-n notices, median and 99th percentile of the compressed
//     message (in the ledger row since sql/0036), and what it adds on
//     disk: the ledger's whole size (heap, indexes, TOAST) after the last
//     pass keeping messages less after the last pass without, per notice;
//   - the first pass with and without it: -scan against -scan-noproof (the
//     same code built with -tags noproof, which keeps nothing), alternated
//     over BENCH_PROOF_ROUNDS rounds (default 3) on the same database, the
//     ledger emptied between passes: medians of wall time and of
//     PostgreSQL CPU per notice, and of the WAL each pass wrote;
//   - `scan proof` of one notice on that ledger, end to end (the process
//     included), median of 5.
//
// BENCH_PROOF_PROFILE=DIR writes each pass's CPU profile into DIR
// (none-1.pprof, kept-1.pprof, ...; cmd/scan's SCAN_CPUPROFILE).
const (
	// ProofTruncate empties the kept messages with the ledger (no foreign
	// key links them).
	ProofTruncate = `TRUNCATE notice_message`
	// ProofStorage is the kept messages' count (in the ledger rows and in
	// notice_message, which a first pass leaves empty), and the median and
	// p99 compressed size of the ledger rows' messages.
	ProofStorage = `
SELECT count(*) + (SELECT count(*) FROM notice_message),
       COALESCE(percentile_disc(0.5) WITHIN GROUP (ORDER BY octet_length(message)), 0),
       COALESCE(percentile_disc(0.99) WITHIN GROUP (ORDER BY octet_length(message)), 0)
FROM notice_ledger WHERE message IS NOT NULL`
	// ProofLedgerSize is the ledger's total size (every month's heap,
	// indexes and TOAST) and notice_message's.
	ProofLedgerSize = `
SELECT (SELECT COALESCE(sum(pg_total_relation_size(inhrelid)), 0) FROM pg_inherits
        WHERE inhparent = 'notice_ledger'::regclass)::bigint
     + pg_total_relation_size('notice_message')`
	// ProofPickSubscription picks the subscription of one sent notice.
	ProofPickSubscription = `SELECT subscription_id FROM notice_ledger WHERE state = 'sent' ORDER BY notice_key LIMIT 1`
)

func (b *bench) proof(ctx context.Context) error {
	total, due := population(b.cfg.proofN)
	db, err := b.database(ctx, "bench_proof")
	if err != nil {
		return err
	}
	defer db.Close()
	if err := b.seedMix(ctx, db, total); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, SubscriptionAnalyze); err != nil {
		return err
	}
	policy, err := b.writePolicy("proof.yaml", policyThroughput)
	if err != nil {
		return err
	}
	outbox := filepath.Join(b.cfg.work, "outbox-proof")
	env := []string{"SCAN_CONFIG=" + policy, "SCAN_SENDER=outbox", "SCAN_OUTBOX_DIR=" + outbox}
	type variant struct {
		name, bin          string
		walls, pgCPU, cpus []time.Duration
		wal                []int64 // bytes of WAL the pass wrote
		size               int64   // the ledger's size after the last pass
	}
	vs := []*variant{{name: "kept", bin: b.cfg.scan}}
	if b.cfg.scanNoProof != "" {
		vs = append([]*variant{{name: "none", bin: b.cfg.scanNoProof}}, vs...)
	}
	for round := range envInt("BENCH_PROOF_ROUNDS", 3) {
		for _, v := range vs {
			r, wal, err := b.proofPass(ctx, db, v.bin, outbox, proofProfileEnv(env, v.name, round))
			if err != nil {
				return err
			}
			v.wal = append(v.wal, wal)
			if err := db.QueryRowContext(ctx, ProofLedgerSize).Scan(&v.size); err != nil {
				return fmt.Errorf("proof: ledger size: %w", err)
			}
			if r.int("sent") != due {
				return fmt.Errorf("proof %s: sent %d, want %d", v.name, r.int("sent"), due)
			}
			v.walls, v.pgCPU, v.cpus = append(v.walls, r.wall), append(v.pgCPU, r.pgCPU), append(v.cpus, r.cpu)
			fmt.Fprintf(b.log, "bench: proof round %d %s: %.2f s, PostgreSQL CPU %.2f s, scan CPU %.2f s, WAL %d B a notice\n", round+1, v.name, r.wall.Seconds(), r.pgCPU.Seconds(), r.cpu.Seconds(), wal/int64(due))
		}
	}
	sizes := []int64{kept(vs).size, -1} // the ledger with messages, and without
	if len(vs) == 2 {
		sizes[1] = vs[0].size
	}
	if err := b.proofStorage(ctx, db, due, sizes); err != nil {
		return err
	}
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(due) }
	kept := kept(vs)
	if len(vs) == 2 {
		none := vs[0]
		pct := func(a, b time.Duration) string { return fmt.Sprintf("%+.1f%%", 100*(a.Seconds()/b.Seconds()-1)) }
		b.add(figure{fmt.Sprintf("first pass keeping each message (N=%d, median of %d)", due, len(kept.walls)),
			fmt.Sprintf("%.1f us wall, %.1f us PostgreSQL CPU, %.1f us scan CPU a notice", per(med(kept.walls)), per(med(kept.pgCPU)), per(med(kept.cpus))),
			fmt.Sprintf("%.1f us wall, %.1f us PostgreSQL CPU, %.1f us scan CPU without", per(med(none.walls)), per(med(none.pgCPU)), per(med(none.cpus))),
			fmt.Sprintf("%s wall, %s PostgreSQL CPU, %s scan CPU", pct(med(kept.walls), med(none.walls)), pct(med(kept.pgCPU), med(none.pgCPU)), pct(med(kept.cpus), med(none.cpus))), "at most +5%"})
		walMed := func(ws []int64) int64 {
			s := slices.Clone(ws)
			slices.Sort(s)
			return s[len(s)/2] / int64(due)
		}
		b.add(figure{fmt.Sprintf("first pass's WAL keeping each message (N=%d, median of %d)", due, len(kept.wal)),
			fmt.Sprintf("%d B a notice", walMed(kept.wal)), fmt.Sprintf("%d B a notice without", walMed(none.wal)),
			fmt.Sprintf("%+d B a notice", walMed(kept.wal)-walMed(none.wal)), "-"})
	}
	return b.proofOne(ctx, db, due, env)
}

// proofProfileEnv adds SCAN_CPUPROFILE to env when BENCH_PROOF_PROFILE
// names a directory: one CPU profile per variant and round there
// (<variant>-<round>.pprof), for go tool pprof -diff_base.
func proofProfileEnv(env []string, variant string, round int) []string {
	dir := os.Getenv("BENCH_PROOF_PROFILE")
	if dir == "" {
		return env
	}
	return append(slices.Clone(env), "SCAN_CPUPROFILE="+filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", variant, round+1)))
}

// kept is the variant that keeps messages, the last.
func kept[T any](vs []*T) *T { return vs[len(vs)-1] }

// proofPass runs one first pass of bin on an empty ledger and returns it
// with the WAL it wrote (after a CHECKPOINT, so that each pass pays for
// its own full-page images alike).
func (b *bench) proofPass(ctx context.Context, db *sql.DB, bin, outbox string, env []string) (result, int64, error) {
	for _, q := range []string{LedgerTruncate, ProofTruncate, Checkpoint} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return result{}, 0, err
		}
	}
	if err := os.RemoveAll(outbox); err != nil {
		return result{}, 0, err
	}
	w0, err := walPos(ctx, db)
	if err != nil {
		return result{}, 0, err
	}
	saved := b.cfg.scan
	b.cfg.scan = bin
	defer func() { b.cfg.scan = saved }()
	r, err := b.scan(ctx, "bench_proof", "run", b.runArgs(b.cfg.batches[0]), env)
	if err != nil {
		return r, 0, err
	}
	wal, err := walSince(ctx, db, w0)
	return r, wal, err
}

// proofStorage reports the kept messages' size per notice, and the
// ledger's on disk with them and without (sizes[1], -1 when not measured).
func (b *bench) proofStorage(ctx context.Context, db *sql.DB, due int, sizes []int64) error {
	var n, p50, p99 int64
	if err := db.QueryRowContext(ctx, ProofStorage).Scan(&n, &p50, &p99); err != nil {
		return fmt.Errorf("proof storage: %w", err)
	}
	if n != int64(due) {
		return fmt.Errorf("proof storage: %d messages kept, want %d", n, due)
	}
	disk := fmt.Sprintf("the ledger %.0f B a notice on disk with them", float64(sizes[0])/float64(n))
	if sizes[1] >= 0 {
		disk += fmt.Sprintf(", %.0f B without: %+.0f B", float64(sizes[1])/float64(n), float64(sizes[0]-sizes[1])/float64(n))
	}
	b.add(figure{fmt.Sprintf("kept message per notice (N=%d)", n),
		fmt.Sprintf("median %d B, p99 %d B compressed", p50, p99), disk, "-", "at most 1 KiB (median)"})
	return nil
}

// proofOne times `scan proof` of one notice on the ledger of the last pass.
func (b *bench) proofOne(ctx context.Context, db *sql.DB, due int, env []string) error {
	var id string
	if err := db.QueryRowContext(ctx, ProofPickSubscription).Scan(&id); err != nil {
		return fmt.Errorf("proof: pick a notice: %w", err)
	}
	var walls []time.Duration
	for i := range 5 {
		out := filepath.Join(b.cfg.work, fmt.Sprintf("proof-%d", i))
		r, err := b.scan(ctx, "bench_proof", "proof", []string{"--subscription", id, "--out", out}, env)
		if err != nil {
			return err
		}
		walls = append(walls, r.wall)
	}
	slices.Sort(walls)
	b.add(figure{fmt.Sprintf("scan proof of one notice, ledger of %d notices (median of 5, process included)", due),
		fmt.Sprintf("%.1f ms", float64(walls[2].Microseconds())/1000), "-", "-", "under 100 ms"})
	return nil
}
