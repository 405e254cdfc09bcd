package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The proof1m scenario (issue 37, `-only proof1m`): `scan proof` of one
// notice in under 100 ms on a ledger of 1M notices.
//
//   - a first pass of BENCH_PROOF1M_SENT due notices (default 200) through
//     the outbox sender keeps their messages by the ledger's own outcome
//     statement;
//   - BENCH_PROOF1M_ROWS past notices (default 1,000,000) of 13 months are
//     added set-based, 20 per subscription for the pass's subscriptions and
//     others, each with the digest of one of the pass's messages and that
//     message kept in the row (message, message_attempt, message_dict, as
//     the outcome statement keeps it, sql/0036) and a delivery event, so
//     the ledger and the evidence the proof reads have a million rows each;
//   - `scan proof --subscription ID --kind K --period-start D` of 5
//     different notices, each a whole process (start, connect, read,
//     verify, PDF, files), median and slowest; then the same for a whole
//     subscription (its ~20 notices), and `scan proof --verify --sample
//     1000`, the CronJob's statement over the 1M rows;
//   - the plan: sequential scans of the ledger's months, notice_evidence
//     and notice_message counted by pg_stat_user_tables over the 5 proofs
//     (0 means every read is an index scan).
const (
	// Proof1MSeed inserts $1 notices of past periods, as HistorySeed does
	// (13 months before $2, $3 subscriptions 'bench_NNNNNNNNN', keys
	// hashed in SQL with $4), sent, each with digest $5 and, as its
	// attempt's kept message, $7 compressed against dictionary $6.
	Proof1MSeed = `
INSERT INTO notice_ledger (notice_key, subscription_id, kind, period_start, revision, state, claimed_at, sent_at,
    message_id, provider_id, attempts, run_id, renews_at, window_closes_at, domain, cancel_token, updated_at, message_sha256,
    message_attempt, message_dict, message)
SELECT k.key, k.sub, k.kind, k.period, 0, 'sent',
       k.period - interval '2 days', k.period - interval '2 days', left(k.key, 32) || '@notices.example.com',
       'outbox:' || left(k.key, 12), 1, 'proof1m-' || (g % 400), k.period, k.period - interval '1 day',
       'd' || (g % 20) || '.example', left(md5(k.key), 32), k.period - interval '2 days', $5::bytea,
       1, $6::smallint, $7::bytea
FROM generate_series(1, $1::int) g
CROSS JOIN LATERAL (SELECT g / $3::int AS cycle) c
CROSS JOIN LATERAL (SELECT 'bench_' || lpad((1 + g % $3::int)::text, 9, '0') AS sub,
                           CASE WHEN c.cycle < 13 THEN 'renewal_notice_t72' ELSE 'history_kind_' || (c.cycle / 13) END AS kind,
                           ($2::date - 400 + 30 * (c.cycle % 13) + g % 28)::date AS period) s
CROSS JOIN LATERAL (SELECT s.sub, s.kind, s.period,
                           encode(hmac(s.sub || '|' || to_char(s.period, 'YYYY-MM-DD') || '|' || s.kind || '|0', $4, 'sha256'), 'hex') AS key) k
ON CONFLICT DO NOTHING`
	// Proof1MKept returns the digest, dictionary and compressed message of
	// one notice the pass sent and kept in its row.
	Proof1MKept = `
SELECT message_sha256, message_dict, message FROM notice_ledger
WHERE message_sha256 IS NOT NULL AND message IS NOT NULL AND message_attempt = attempts AND run_id NOT LIKE 'proof1m-%'
ORDER BY notice_key LIMIT 1`
	// Proof1MEvidence records a delivery event for every seeded notice, as
	// the receiver would have, so that the evidence the proof reads is a
	// million rows too.
	Proof1MEvidence = `
INSERT INTO notice_evidence (notice_key, period_start, attempt, kind, event, occurred_at, recorded_at)
SELECT l.notice_key, l.period_start, l.attempts, 'delivered', 'Delivery', l.sent_at + interval '4 seconds', l.sent_at + interval '5 seconds'
FROM notice_ledger l
WHERE l.run_id LIKE 'proof1m-%'
ON CONFLICT DO NOTHING`
	// Proof1MAnalyze settles the tables the proof reads.
	Proof1MAnalyze = `VACUUM ANALYZE notice_ledger, notice_message, notice_evidence`
	// Proof1MNotices picks $1 notices the pass sent, one per subscription.
	Proof1MNotices = `
SELECT subscription_id, kind, period_start::text FROM notice_ledger
WHERE state = 'sent' AND message_sha256 IS NOT NULL AND run_id NOT LIKE 'proof1m-%'
ORDER BY notice_key LIMIT $1`
	// Proof1MScans returns the sequential and index scans so far of each
	// table the proof reads, with its live rows.
	Proof1MScans = `
SELECT relname, COALESCE(seq_scan, 0), COALESCE(idx_scan, 0), n_live_tup FROM pg_stat_user_tables
WHERE relname LIKE 'notice_ledger%' OR relname LIKE 'notice_evidence%' OR relname LIKE 'notice_message%'`
	// Proof1MStatsClear drops this session's cached statistics snapshot.
	Proof1MStatsClear = `SELECT pg_stat_clear_snapshot()`
	// Proof1MOthers counts the other client sessions on this database: a
	// scan process's backend has flushed its statistics once it is gone.
	Proof1MOthers = `
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`
)

func (b *bench) proof1m(ctx context.Context) error {
	rows, sent := envInt("BENCH_PROOF1M_ROWS", 1_000_000), envInt("BENCH_PROOF1M_SENT", 200)
	total, due := population(sent)
	db, err := b.database(ctx, "bench_proof1m")
	if err != nil {
		return err
	}
	defer db.Close()
	if err := b.seedMix(ctx, db, total); err != nil {
		return err
	}
	policy, err := b.writePolicy("proof1m.yaml", policyThroughput)
	if err != nil {
		return err
	}
	env := []string{"SCAN_CONFIG=" + policy, "SCAN_SENDER=outbox", "SCAN_OUTBOX_DIR=" + filepath.Join(b.cfg.work, "outbox-proof1m")}
	r, err := b.scan(ctx, "bench_proof1m", "run", b.runArgs(b.cfg.batches[0]), env)
	if err != nil {
		return err
	}
	if r.int("sent") != due {
		return fmt.Errorf("proof1m: sent %d, want %d", r.int("sent"), due)
	}
	if err := b.proof1mSeed(ctx, db, rows); err != nil {
		return err
	}
	var n int
	if err := db.QueryRowContext(ctx, LedgerCount).Scan(&n); err != nil {
		return err
	}
	return b.proof1mTime(ctx, db, n, env)
}

// proof1mSeed adds rows past notices with kept messages, set-based.
func (b *bench) proof1mSeed(ctx context.Context, db *sql.DB, rows int) error {
	var months []string
	for m := 0; m <= 14; m++ {
		months = append(months, b.now.AddDate(0, -m, 0).Format("2006-01")+"-01")
	}
	var digest, msg []byte
	var dict int
	if err := db.QueryRowContext(ctx, Proof1MKept).Scan(&digest, &dict, &msg); err != nil {
		return fmt.Errorf("proof1m: no kept message after the pass: %w", err)
	}
	for _, step := range []struct {
		q    string
		args []any
	}{
		{ExtensionPgcrypto, nil},
		{HistoryMonths, []any{"{" + strings.Join(months, ",") + "}"}},
		{Proof1MSeed, []any{rows, b.now, max(rows/20, 1), secret, digest, dict, msg}},
		{Proof1MEvidence, nil},
		{Proof1MAnalyze, nil},
	} {
		t := time.Now()
		if _, err := db.ExecContext(ctx, step.q, step.args...); err != nil {
			return fmt.Errorf("proof1m seed: %w", err)
		}
		fmt.Fprintf(b.log, "bench: proof1m: seed step in %s\n", time.Since(t).Round(time.Millisecond))
	}
	return nil
}

// proof1mTime times `scan proof` of single notices, of a whole
// subscription and the verify sample, and counts sequential scans.
func (b *bench) proof1mTime(ctx context.Context, db *sql.DB, ledgerRows int, env []string) error {
	// Close the seeding sessions: a backend flushes its statistics (the
	// seed's own scans) when it ends, and proof1mScans waits for every
	// other session to end before it reads them.
	db.SetMaxIdleConns(0)
	picked, err := db.QueryContext(ctx, Proof1MNotices, 5)
	if err != nil {
		return err
	}
	var notices [][3]string
	for picked.Next() {
		var n [3]string
		if err := picked.Scan(&n[0], &n[1], &n[2]); err != nil {
			picked.Close()
			return err
		}
		notices = append(notices, n)
	}
	picked.Close()
	if len(notices) < 5 {
		return fmt.Errorf("proof1m: %d sent notices to prove, want 5", len(notices))
	}
	before, err := b.proof1mScans(ctx, db)
	if err != nil {
		return err
	}
	var walls, cpus []time.Duration
	for i, n := range notices {
		out := filepath.Join(b.cfg.work, fmt.Sprintf("proof1m-%d", i))
		r, err := b.scan(ctx, "bench_proof1m", "proof", []string{"--subscription", n[0], "--kind", n[1], "--period-start", n[2], "--out", out}, env)
		if err != nil {
			return err
		}
		walls, cpus = append(walls, r.wall), append(cpus, r.cpu)
	}
	after, err := b.proof1mScans(ctx, db)
	if err != nil {
		return err
	}
	var idx int64
	var seq []string
	for name, a := range after {
		idx += a.idx - before[name].idx
		if d := a.seq - before[name].seq; d > 0 {
			seq = append(seq, fmt.Sprintf("%s (%d rows) %dx", name, a.rows, d))
		}
	}
	slices.Sort(seq)
	fmt.Fprintf(b.log, "bench: proof1m: sequential scans over the 5 proofs: %v; index scans: %d\n", seq, idx)
	slices.Sort(walls)
	slices.Sort(cpus)
	b.add(figure{fmt.Sprintf("scan proof of one notice, ledger of %d notices each with its message kept (5 notices, process included)", ledgerRows),
		fmt.Sprintf("%s median, %s slowest; scan CPU %s median", walls[2].Round(100*time.Microsecond), walls[4].Round(100*time.Microsecond), cpus[2].Round(100*time.Microsecond)),
		"-", fmt.Sprintf("%d index scans; sequential: %s", idx, orNone(seq)), "under 100 ms"})
	r, err := b.scan(ctx, "bench_proof1m", "proof", []string{"--subscription", notices[0][0], "--out", filepath.Join(b.cfg.work, "proof1m-all")}, env)
	if err != nil {
		return err
	}
	b.add(figure{"scan proof of a whole subscription (~20 notices, 20 PDFs), same ledger", r.wall.Round(time.Millisecond).String(), "-", "-", "-"})
	r, err = b.scan(ctx, "bench_proof1m", "proof", []string{"--verify", "--sample", "1000"}, env)
	if err != nil {
		return err
	}
	b.add(figure{"scan proof --verify --sample 1000 (the CronJob's check), same ledger", r.wall.Round(time.Millisecond).String(),
		"-", "exit 0: none mismatched", "-"})
	return nil
}

// tableScans is a table's scans so far and its live rows.
type tableScans struct{ seq, idx, rows int64 }

// proof1mScans returns the scans of the proof's tables so far, once no
// other client session is left on the database (a finished process's
// backend has flushed its statistics by then).
func (b *bench) proof1mScans(ctx context.Context, db *sql.DB) (map[string]tableScans, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		var others int
		if err := conn.QueryRowContext(ctx, Proof1MOthers).Scan(&others); err != nil {
			return nil, err
		}
		if others == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // a backend's exit has no notification to wait on
	}
	if _, err := conn.ExecContext(ctx, Proof1MStatsClear); err != nil {
		return nil, err
	}
	rows, err := conn.QueryContext(ctx, Proof1MScans)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]tableScans{}
	for rows.Next() {
		var name string
		var t tableScans
		if err := rows.Scan(&name, &t.seq, &t.idx, &t.rows); err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, rows.Err()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
