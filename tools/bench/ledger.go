package main

// The ledger-at-scale scenario (-only ledger): what PostgreSQL does per
// notice in a first pass (its CPU, from /proc, and the WAL it writes, from
// pg_current_wal_lsn() differences) beside a minimal baseline in the same
// run, and the first pass and re-run again with years of history already
// in the ledger. Kept apart from main.go's scenarios.

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// Statements of the ledger scenario.
const (
	// MinimalSetup is the least ledger that keeps the two guarantees: the
	// same columns, a primary key on notice_key and the unique business
	// tuple, nothing else.
	MinimalSetup = `CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE TABLE bench_minimal (LIKE notice_ledger INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
ALTER TABLE bench_minimal ADD PRIMARY KEY (notice_key);
CREATE UNIQUE INDEX ON bench_minimal (subscription_id, kind, period_start, revision)`
	// MinimalDrop removes it.
	MinimalDrop = `DROP TABLE bench_minimal`
	// Checkpoint flushes every dirty page before a measured phase, so that
	// the full-page images in its WAL do not depend on where the server's
	// own checkpoints happened to fall (each page's first change after a
	// checkpoint writes the whole page).
	Checkpoint = `CHECKPOINT`
	// WALRecords groups the WAL between two positions by relation and
	// record type (pg_walinspect): where a pass's bytes go. $1 from, $2 to,
	// $3 notices.
	WALRecords = `
SELECT left(COALESCE(c.relname, r.rel, '-'), 48), r.resource_manager || ' ' || r.record_type,
       count(*), round(sum(r.record_length)::numeric / $3, 1), round(sum(r.fpi_length)::numeric / $3, 1)
FROM (SELECT resource_manager, record_type, record_length, fpi_length,
             substring(block_ref from 'rel \d+/\d+/(\d+)') AS rel
      FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)) r
LEFT JOIN pg_class c ON c.relfilenode::text = r.rel
GROUP BY 1, 2 ORDER BY sum(r.record_length) DESC LIMIT 16`
	// ExtensionWALInspect gives SQL pg_get_wal_records_info.
	ExtensionWALInspect = `CREATE EXTENSION IF NOT EXISTS pg_walinspect`
	// WALPosition is the server's current WAL insert position.
	WALPosition = `SELECT pg_current_wal_lsn()::text`
	// WALDiff is the number of WAL bytes between two positions.
	WALDiff = `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint`
	// LedgerPartitioned reports whether the ledger is partitioned (a
	// ledger from before 0002 is not: the bench also runs older binaries).
	LedgerPartitioned = `SELECT to_regproc('notice_ledger_ensure_partitions') IS NOT NULL`
	// HistoryMonths creates the months of the history. $1 months (date[]).
	HistoryMonths = `SELECT notice_ledger_ensure_partitions($1::date[])`
	// HistorySeed inserts $1 rows of past billing periods, spread over the
	// 13 months before $2, for the same subscription ids as the due ones
	// ($3 of them; each has a notice a month, of this kind and then of
	// other kinds): mostly sent, some failed or missed,
	// none claimed or retry (an earlier pass would have settled them).
	// Set-based, the keys hashed in SQL (sha256 of the tuple: any 64 hex
	// characters do).
	HistorySeed = `
INSERT INTO notice_ledger (notice_key, subscription_id, kind, period_start, revision, state, claimed_at, sent_at,
    message_id, provider_id, attempts, last_error, run_id, renews_at, window_closes_at, domain, cancel_token, updated_at)
SELECT k.key, k.sub, k.kind, k.period, 0,
       (ARRAY['sent','sent','sent','sent','sent','sent','sent','sent','sent','sent','sent','sent','sent','sent','sent','sent','sent','sent','failed','missed'])[1 + g % 20],
       k.period - interval '2 days', k.period - interval '2 days', left(k.key, 32) || '@notices.example.com',
       'outbox:' || left(k.key, 12), 1, NULL, 'history-' || (g % 400), k.period, k.period - interval '1 day',
       'd' || (g % 20) || '.example', left(md5(k.key), 32), k.period - interval '2 days'
FROM generate_series(1, $1::int) g
CROSS JOIN LATERAL (SELECT g / $3::int AS cycle) c
CROSS JOIN LATERAL (SELECT 'bench_' || lpad((1 + g % $3::int)::text, 9, '0') AS sub,
                           CASE WHEN c.cycle < 13 THEN 'renewal_notice_t72' ELSE 'history_kind_' || (c.cycle / 13) END AS kind,
                           ($2::date - 400 + 30 * (c.cycle % 13) + g % 28)::date AS period) s
CROSS JOIN LATERAL (SELECT s.sub, s.kind, s.period,
                           encode(hmac(s.sub || '|' || to_char(s.period, 'YYYY-MM-DD') || '|' || s.kind || '|0', $4, 'sha256'), 'hex') AS key) k
ON CONFLICT DO NOTHING`
	// ExtensionPgcrypto gives SQL hmac(), to derive keys as package notice does.
	ExtensionPgcrypto = `CREATE EXTENSION IF NOT EXISTS pgcrypto`
	// LedgerAnalyze refreshes the ledger's statistics after seeding.
	LedgerAnalyze = `VACUUM ANALYZE notice_ledger`
	// PartitionTruncate empties one month of the ledger (%s: its quoted
	// name), so that the next round's first pass claims it again.
	PartitionTruncate = `TRUNCATE %s`
	// MessageTruncate empties the kept messages (where the schema has
	// them) with the months PartitionTruncate empties: the history has
	// none, and the next round's must be written again (LedgerTruncate).
	MessageTruncate = `DO $$ BEGIN
    IF to_regclass('notice_message') IS NOT NULL THEN TRUNCATE notice_message; END IF;
END $$`
	// PartitionExists reports whether a table of that name exists.
	PartitionExists = `SELECT to_regclass(quote_ident($1)) IS NOT NULL`
	// LedgerVacuum cleans up the dead row versions of a first pass (or,
	// renamed, of the minimal baseline), counted in the per-notice CPU.
	LedgerVacuum = `VACUUM notice_ledger`
	// LedgerCount counts the ledger's rows.
	LedgerCount = `SELECT count(*) FROM notice_ledger`
)

// walPos returns the current WAL position.
func walPos(ctx context.Context, db *sql.DB) (string, error) {
	var lsn string
	err := db.QueryRowContext(ctx, WALPosition).Scan(&lsn)
	return lsn, err
}

// walSince returns the WAL bytes written since from.
func walSince(ctx context.Context, db *sql.DB, from string) (int64, error) {
	to, err := walPos(ctx, db)
	if err != nil {
		return 0, err
	}
	var n int64
	err = db.QueryRowContext(ctx, WALDiff, to, from).Scan(&n)
	return n, err
}

// historyRows is how many past rows the scale figures seed: 50 per due
// notice (10M at the default N = 200k), or BENCH_HISTORY.
func (b *bench) historyRows(due int) (int, error) {
	if v := os.Getenv("BENCH_HISTORY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("BENCH_HISTORY=%q is not a number of rows", v)
		}
		return n, nil
	}
	return 50 * due, nil
}

// perNotice is one pass's PostgreSQL work.
type perNotice struct {
	cpu  time.Duration
	wal  int64
	wall time.Duration
	// from and to are the pass's WAL positions (walRecords).
	from, to string
}

func (p perNotice) String(n int) string {
	return fmt.Sprintf("%.1f us CPU, %.0f B WAL per notice (%.2f s; PostgreSQL CPU %.1f s, WAL %.1f MiB)",
		float64(p.cpu.Microseconds())/float64(n), float64(p.wal)/float64(n), p.wall.Seconds(), p.cpu.Seconds(), float64(p.wal)/(1<<20))
}

// ledgerRounds is how many times the per-notice figure measures the
// baseline and the first pass: BENCH_LEDGER_ROUNDS, default 3.
func (b *bench) ledgerRounds() (int, error) {
	if v := os.Getenv("BENCH_LEDGER_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("BENCH_LEDGER_ROUNDS=%q is not a number of rounds", v)
		}
		return n, nil
	}
	return 3, nil
}

// least is the least CPU, WAL and wall time of ps, each on its own.
func least(ps []perNotice) perNotice {
	m := ps[0]
	for _, p := range ps[1:] {
		m.cpu, m.wal, m.wall = min(m.cpu, p.cpu), min(m.wal, p.wal), min(m.wall, p.wall)
	}
	return m
}

// wallList is the wall time of each round, e.g. "30.1 s, 28.4 s".
func wallList(ps []perNotice) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%.2f s", p.wall.Seconds()))
	}
	return strings.Join(out, ", ")
}

// cpuList is the CPU time of each round, e.g. "12.1 s, 14.0 s".
func cpuList(ps []perNotice) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%.1f s", p.cpu.Seconds()))
	}
	return strings.Join(out, ", ")
}

// minimalBaseline claims the due rows and marks them sent with the bench's
// two set-based statements into bench_minimal (MinimalSetup), and returns
// what PostgreSQL did; it drops the table again.
func (b *bench) minimalBaseline(ctx context.Context, db *sql.DB, due int, lo, hi time.Time) (perNotice, error) {
	if _, err := db.ExecContext(ctx, MinimalSetup); err != nil {
		return perNotice{}, fmt.Errorf("minimal setup: %w", err)
	}
	var base perNotice
	if _, err := db.ExecContext(ctx, Checkpoint); err != nil {
		return base, err
	}
	pg0 := b.pgCPU()
	w0, err := walPos(ctx, db)
	if err != nil {
		return base, err
	}
	t := time.Now()
	res, err := db.ExecContext(ctx, strings.Replace(BaselineClaim, "bench_ledger", "bench_minimal", 1), kind, b.now, lo, hi, secret, closeBefore.String())
	if err != nil {
		return base, fmt.Errorf("minimal claim: %w", err)
	}
	if claimed, _ := res.RowsAffected(); int(claimed) != due {
		return base, fmt.Errorf("minimal baseline claimed %d rows, want %d", claimed, due)
	}
	if _, err := db.ExecContext(ctx, strings.Replace(BaselineMarkSent, "bench_ledger", "bench_minimal", 1), b.now); err != nil {
		return base, fmt.Errorf("minimal mark sent: %w", err)
	}
	base.wall = time.Since(t)
	// The cleanup its writes need, which a pass pays in part while it runs
	// (autovacuum) and the baseline would otherwise never pay.
	if _, err := db.ExecContext(ctx, strings.Replace(LedgerVacuum, "notice_ledger", "bench_minimal", 1)); err != nil {
		return base, fmt.Errorf("minimal vacuum: %w", err)
	}
	base.cpu = b.pgCPU() - pg0
	if base.wal, err = walSince(ctx, db, w0); err != nil {
		return base, err
	}
	fmt.Fprintf(b.log, "bench: ledger: minimal baseline: %s\n", base.String(due))
	_, err = db.ExecContext(ctx, MinimalDrop)
	return base, err
}

func (b *bench) ledgerScale(ctx context.Context) error {
	n := b.cfg.n
	total, due := population(n)
	db, err := b.database(ctx, "bench_ledger")
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(b.log, "bench: ledger: seeding %d subscriptions (%d due)\n", total, due)
	if err := b.seedMix(ctx, db, total); err != nil {
		return err
	}
	lo, hi := b.now.Add(closeBefore), b.now.Add(openBefore)

	policy, err := b.writePolicy("ledger.yaml", policyThroughput)
	if err != nil {
		return err
	}
	outbox := filepath.Join(b.cfg.work, "outbox-ledger")
	defer os.RemoveAll(outbox)
	env := []string{"SCAN_CONFIG=" + policy, "SCAN_SENDER=outbox", "SCAN_OUTBOX_DIR=" + outbox}
	// pass runs scan run once; after a first pass (vacuum) it also runs
	// VACUUM on the ledger, whose CPU and WAL count with the pass's (not
	// its wall time): a pass's writes leave dead row versions that the
	// baseline's are charged for as well, and autovacuum cleans some of
	// them during a pass, some after, as its timer falls.
	pass := func(label string, vacuum bool) (perNotice, result, error) {
		_ = os.RemoveAll(outbox)
		if _, err := db.ExecContext(ctx, Checkpoint); err != nil {
			return perNotice{}, result{}, err
		}
		w0, err := walPos(ctx, db)
		if err != nil {
			return perNotice{}, result{}, err
		}
		fmt.Fprintf(b.log, "bench: ledger: %s\n", label)
		r, err := b.scan(ctx, "bench_ledger", "run", b.runArgs(b.cfg.batches[0]), env)
		if err != nil {
			return perNotice{}, r, err
		}
		p := perNotice{cpu: r.pgCPU, wall: r.wall}
		if vacuum {
			pg0 := b.pgCPU()
			if _, err := db.ExecContext(ctx, LedgerVacuum); err != nil {
				return p, r, fmt.Errorf("vacuum: %w", err)
			}
			p.cpu += b.pgCPU() - pg0
		}
		p.wal, err = walSince(ctx, db, w0)
		p.from = w0
		if err == nil {
			p.to, err = walPos(ctx, db)
		}
		return p, r, err
	}

	// The minimal baseline and the first pass, alternately, several rounds
	// (BENCH_LEDGER_ROUNDS, default 3): PostgreSQL's CPU time for the same
	// work moves by a third from one run to the next on a shared machine,
	// so each figure is the least of its rounds, and all are printed.
	rounds, err := b.ledgerRounds()
	if err != nil {
		return err
	}
	var bases, firsts, reruns []perNotice
	for i := 0; i < rounds; i++ {
		base, err := b.minimalBaseline(ctx, db, due, lo, hi)
		if err != nil {
			return err
		}
		bases = append(bases, base)
		if i > 0 {
			if _, err := db.ExecContext(ctx, LedgerTruncate); err != nil {
				return err
			}
		}
		first, r, err := pass(fmt.Sprintf("first pass, empty ledger (round %d of %d)", i+1, rounds), true)
		if err != nil {
			return err
		}
		if r.int("sent") != due {
			return fmt.Errorf("first pass sent %d, want %d", r.int("sent"), due)
		}
		firsts = append(firsts, first)
		if i == rounds-1 {
			// Before the re-run's checkpoint lets the server recycle
			// the pass's WAL segments.
			b.walRecords(ctx, db, first, due)
		}
		rerun, r, err := pass(fmt.Sprintf("re-run, empty ledger (round %d of %d)", i+1, rounds), false)
		if err != nil {
			return err
		}
		if r.int("minted") != 0 {
			return fmt.Errorf("re-run minted %d", r.int("minted"))
		}
		reruns = append(reruns, rerun)
	}
	base, first, rerun := least(bases), least(firsts), least(reruns)
	b.add(figure{fmt.Sprintf("PostgreSQL per notice, first pass (N=%d, least of %d rounds)", due, rounds),
		first.String(due) + "; rounds: " + cpuList(firsts), base.String(due) + "; rounds: " + cpuList(bases),
		fmt.Sprintf("CPU %.2fx, WAL %.2fx", first.cpu.Seconds()/base.cpu.Seconds(), float64(first.wal)/float64(base.wal)), "CPU within 1.5x, WAL at most 1.35x (issue 39)"})

	// The same two passes with years of history in the ledger.
	hist, err := b.historyRows(due)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, LedgerTruncate); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, ExtensionPgcrypto); err != nil {
		return err
	}
	var months []string
	for m := 0; m <= 14; m++ {
		months = append(months, b.now.AddDate(0, -m, 0).Format("2006-01")+"-01")
	}
	var partitioned bool
	if err := db.QueryRowContext(ctx, LedgerPartitioned).Scan(&partitioned); err != nil {
		return err
	}
	if partitioned {
		if _, err := db.ExecContext(ctx, HistoryMonths, "{"+strings.Join(months, ",")+"}"); err != nil {
			return fmt.Errorf("history months: %w", err)
		}
	}
	fmt.Fprintf(b.log, "bench: ledger: seeding %d rows of past periods\n", hist)
	t := time.Now()
	if _, err := db.ExecContext(ctx, HistorySeed, hist, b.now, total, secret); err != nil {
		return fmt.Errorf("history seed: %w", err)
	}
	if _, err := db.ExecContext(ctx, LedgerAnalyze); err != nil {
		return err
	}
	var rows int
	if err := db.QueryRowContext(ctx, LedgerCount).Scan(&rows); err != nil {
		return err
	}
	fmt.Fprintf(b.log, "bench: ledger: %d past rows in %s\n", rows, time.Since(t).Round(time.Second))
	// The same rounds over the history: between them, the months of the
	// due notices are emptied again (the history is older).
	var firstsH, rerunsH []perNotice
	for i := 0; i < rounds; i++ {
		if i > 0 {
			if !partitioned {
				break // a ledger from before 0002: one round
			}
			for _, m := range []time.Time{lo, hi} {
				name := "notice_ledger_p" + m.UTC().Format("200601")
				var exists bool
				if err := db.QueryRowContext(ctx, PartitionExists, name).Scan(&exists); err != nil {
					return err
				}
				if !exists {
					continue
				}
				if _, err := db.ExecContext(ctx, fmt.Sprintf(PartitionTruncate, pq.QuoteIdentifier(name))); err != nil {
					return err
				}
			}
			if _, err := db.ExecContext(ctx, MessageTruncate); err != nil {
				return err
			}
		}
		firstH, r, err := pass(fmt.Sprintf("first pass, %d past rows (round %d of %d)", rows, i+1, rounds), true)
		if err != nil {
			return err
		}
		if r.int("sent") != due {
			return fmt.Errorf("first pass over history sent %d, want %d", r.int("sent"), due)
		}
		rerunH, _, err := pass(fmt.Sprintf("re-run, %d past rows (round %d of %d)", rows, i+1, rounds), false)
		if err != nil {
			return err
		}
		firstsH, rerunsH = append(firstsH, firstH), append(rerunsH, rerunH)
	}
	firstH, rerunH := least(firstsH), least(rerunsH)
	b.add(figure{fmt.Sprintf("first pass with %d past rows (N=%d, least of %d rounds)", rows, due, len(firstsH)),
		fmt.Sprintf("%.2f s (PostgreSQL CPU %.1f s); rounds: %s", firstH.wall.Seconds(), firstH.cpu.Seconds(), wallList(firstsH)),
		fmt.Sprintf("%.2f s on an empty ledger (PostgreSQL CPU %.1f s); rounds: %s", first.wall.Seconds(), first.cpu.Seconds(), wallList(firsts)),
		fmt.Sprintf("%.2fx", firstH.wall.Seconds()/first.wall.Seconds()), "within 1.2x"})
	b.add(figure{fmt.Sprintf("re-run with %d past rows (N=%d, least of %d rounds)", rows, due, len(rerunsH)),
		fmt.Sprintf("%.2f s (PostgreSQL CPU %.1f s); rounds: %s", rerunH.wall.Seconds(), rerunH.cpu.Seconds(), wallList(rerunsH)),
		fmt.Sprintf("%.2f s on an empty ledger (PostgreSQL CPU %.1f s); rounds: %s", rerun.wall.Seconds(), rerun.cpu.Seconds(), wallList(reruns)),
		fmt.Sprintf("%.2fx", rerunH.wall.Seconds()/rerun.wall.Seconds()), "at most 1.2x (issue 39)"})
	return nil
}

// walRecords prints where the WAL of pass p went, by relation and record
// type (pg_walinspect), per notice; n is the pass's notices.
func (b *bench) walRecords(ctx context.Context, db *sql.DB, p perNotice, n int) {
	if _, err := db.ExecContext(ctx, ExtensionWALInspect); err != nil {
		fmt.Fprintf(b.log, "bench: no pg_walinspect (%v): no WAL breakdown\n", err)
		return
	}
	rows, err := db.QueryContext(ctx, WALRecords, p.from, p.to, n)
	if err != nil {
		fmt.Fprintf(b.log, "bench: WAL breakdown: %v\n", err)
		return
	}
	defer rows.Close()
	fmt.Fprintf(b.out, "WAL of the first pass by relation and record (pg_walinspect; N=%d, %.0f B per notice):\n\n", n, float64(p.wal)/float64(n))
	fmt.Fprintln(b.out, "| relation | record | count | B per notice | of which full-page images |")
	fmt.Fprintln(b.out, "|---|---|---:|---:|---:|")
	for rows.Next() {
		var rel, rec, per, fpi string
		var count int
		if err := rows.Scan(&rel, &rec, &count, &per, &fpi); err != nil {
			fmt.Fprintf(b.log, "bench: WAL breakdown: %v\n", err)
			return
		}
		fmt.Fprintf(b.out, "| %s | %s | %d | %s | %s |\n", rel, rec, count, per, fpi)
	}
	fmt.Fprintln(b.out)
}
