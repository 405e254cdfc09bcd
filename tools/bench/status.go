package main

// The status scenario (issue 35, -only status): `scan status -o json`,
// the operator's one screen, on a ledger of -status-n rows (default 10M):
// the history of HistorySeed (13 months, one in twenty failed or missed),
// the rows of the last hours (claims in quarantine, retries, failures),
// and a year of passes of four shards. Target: under a second.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Statements of the status scenario.
const (
	// StatusRecentSeed inserts $1 rows of the current month changed in the
	// last 30 minutes before $2: claimed (in quarantine), retry, failed,
	// missed and sent in turn. Keys hashed in SQL as HistorySeed's.
	StatusRecentSeed = `
INSERT INTO notice_ledger (notice_key, subscription_id, kind, period_start, revision, state, claimed_at, sent_at,
    message_id, attempts, run_id, renews_at, window_closes_at, domain, cancel_token, updated_at)
SELECT k.key, k.sub, 'status_kind', date_trunc('month', $2::timestamptz)::date, 0,
       (ARRAY['claimed','retry','failed','missed','sent'])[1 + g % 5],
       $2::timestamptz - (g % 30) * interval '1 minute', NULL, left(k.key, 32) || '@notices.example.com', 1,
       'recent-' || (g % 7), $2::timestamptz + interval '3 days', $2::timestamptz + interval '2 days',
       'd' || (g % 20) || '.example', left(md5(k.key), 32),
       CASE WHEN g % 5 = 0 THEN NULL ELSE $2::timestamptz - (g % 30) * interval '1 minute' END
FROM generate_series(1, $1::int) g
CROSS JOIN LATERAL (SELECT 'recent_' || g AS sub, encode(sha256(('recent_' || g)::bytea), 'hex') AS key) k`
	// StatusPassSeed inserts $1 completed passes, four shards, one an hour
	// before $2.
	StatusPassSeed = `
INSERT INTO notice_pass (run_id, shard, shards, started_at, ended_at, completed, summary)
SELECT 'bench-' || g, g % 4, 4, $2::timestamptz - g * interval '1 hour',
       $2::timestamptz - g * interval '1 hour' + interval '5 minutes', true, '{"sent": 100}'
FROM generate_series(1, $1::int) g`
)

// statusScenario seeds the ledger and times `scan status -o json` five
// times, reporting the median and the slowest.
func (b *bench) statusScenario(ctx context.Context) error {
	db, err := b.database(ctx, "bench_status")
	if err != nil {
		return err
	}
	defer db.Close()
	var months []string
	for m := 0; m <= 14; m++ {
		months = append(months, b.now.AddDate(0, -m, 0).Format("2006-01")+"-01")
	}
	for _, step := range []struct {
		q    string
		args func() []any // evaluated when the step runs
	}{
		{ExtensionPgcrypto, nil},
		{HistoryMonths, func() []any { return []any{"{" + strings.Join(months, ",") + "}"} }},
		{HistorySeed, func() []any { return []any{b.cfg.statusN, b.now, max(b.cfg.statusN/50, 1), secret} }},
		// The recent rows at the clock's now, not the bench's start: the
		// history of 10M rows takes most of an hour to seed, and claims
		// older than 1h would make scan status exit 1 (needs a person).
		{StatusRecentSeed, func() []any { return []any{max(b.cfg.statusN/1000, 100), time.Now().UTC()} }},
		{StatusPassSeed, func() []any { return []any{24 * 365, time.Now().UTC()} }},
		{LedgerAnalyze, nil},
	} {
		var args []any
		if step.args != nil {
			args = step.args()
		}
		t := time.Now()
		if _, err := db.ExecContext(ctx, step.q, args...); err != nil {
			return fmt.Errorf("status seed: %w", err)
		}
		fmt.Fprintf(b.log, "bench: status: seed step in %s\n", time.Since(t).Round(time.Millisecond))
	}
	var rows int
	if err := db.QueryRowContext(ctx, LedgerCount).Scan(&rows); err != nil {
		return err
	}
	walls := make([]time.Duration, 0, 5)
	for range 5 {
		r, err := b.scan(ctx, "bench_status", "status", []string{"-o", "json"}, nil)
		if err != nil {
			return err
		}
		walls = append(walls, r.wall)
	}
	slices.Sort(walls)
	b.add(figure{name: fmt.Sprintf("scan status -o json, %d ledger rows", rows),
		value:    fmt.Sprintf("%s median, %s slowest of 5 (whole process)", walls[2].Round(time.Millisecond), walls[4].Round(time.Millisecond)),
		baseline: "-", ratio: "-", target: "under 1 s"})
	return nil
}
