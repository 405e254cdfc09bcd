package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The due scenario (issue 27): the same first pass with the kind opened by
// open_before and by a due: rule that selects the same notices, each run
// rounds times in turn; the figure is the CPU (scan and PostgreSQL) per
// notice sent, the least of the rounds of each.

// dueNow is the scenario's --now: a Wednesday, 12:00 UTC, with no US
// holiday or clock change within two weeks. Two US working days before a
// charge, at 00:00 in a UTC+0 zone, opens every charge up to Friday's end;
// open_before 60h (from Thursday 12:00, close_before 24h) the same ones.
var dueNow = time.Date(2027, 2, 24, 12, 0, 0, 0, time.UTC)

// SubscriptionSeedDue inserts $1 subscriptions, ids due_000000001...: two
// in three renew from 25h after $2 to Friday 23:59 (due under both
// policies), the others two weeks later (due under neither). Their
// time_zone is one of four zones at UTC+0 in February, so both policies
// select the same notices and each row's zone is looked up.
const SubscriptionSeedDue = `
INSERT INTO subscriptions (id, email, status, renews_at, period_start, notice_revision, name, plan, time_zone)
SELECT 'due_' || lpad(g::text, 9, '0'),
       'user' || g || '@d' || (g % 20) || '.example',
       'active', r.at, r.at::date, 0, 'Customer ' || g, 'Pro',
       (ARRAY['UTC', 'Europe/London', 'Africa/Abidjan', 'Atlantic/Reykjavik'])[1 + g % 4]
FROM generate_series(1, $1::int) g
CROSS JOIN LATERAL (SELECT CASE WHEN g % 3 = 0
        THEN $2::timestamptz + interval '14 days' + (g % 1000) * interval '1 minute'
        ELSE $2::timestamptz + interval '25 hours' + (g % 2100) * interval '1 minute' END AS at) r`

const policyDueHead = `schedule: "0 2 * * *"
message_id_domain: notices.example.com
from: "Example Box <notices@example.com>"
rate:
  default: {per_second: 10000000, burst: 10000000}
  global: {per_second: 10000000, burst: 10000000}
concurrency: 16
notices:
  - kind: renewal_notice_t72
    close_before: 24h
`

const (
	policyOpenBefore = policyDueHead + "    open_before: 60h\n"
	policyDueRule    = policyDueHead + "    due: {working_days_before: 2, at: \"00:00\", calendar: US}\n"
)

// dueRounds is how many times each policy's pass runs.
const dueRounds = 3

func (b *bench) due(ctx context.Context) error {
	n := b.cfg.dueN
	db, err := b.database(ctx, "bench_due")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, SubscriptionSeedDue, n, dueNow); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if _, err := db.ExecContext(ctx, SubscriptionAnalyze); err != nil {
		return err
	}
	want := n - n/3
	var open, due []perNotice
	for range dueRounds {
		for _, p := range []struct {
			name, body string
			out        *[]perNotice
		}{{"open_before.yaml", policyOpenBefore, &open}, {"due.yaml", policyDueRule, &due}} {
			pn, err := b.duePass(ctx, db, p.name, p.body, want)
			if err != nil {
				return err
			}
			*p.out = append(*p.out, pn)
		}
	}
	o, d := least(open), least(due)
	per := func(p perNotice) string {
		return fmt.Sprintf("%.1f us CPU per notice, scan + PostgreSQL (%.2f s wall)", float64(p.cpu.Microseconds())/float64(want), p.wall.Seconds())
	}
	b.add(figure{fmt.Sprintf("first pass, due: rule (N=%d)", want), per(d) + "; rounds " + cpuList(due),
		per(o) + " with open_before; rounds " + cpuList(open),
		fmt.Sprintf("%.3fx CPU per notice", d.cpu.Seconds()/o.cpu.Seconds()), "at most 1.05x"})
	return nil
}

// duePass runs one first pass of policy body at dueNow over an empty
// ledger and returns its cost; it must send want notices.
func (b *bench) duePass(ctx context.Context, db *sql.DB, name, body string, want int) (perNotice, error) {
	policy, err := b.writePolicy(name, body)
	if err != nil {
		return perNotice{}, err
	}
	if _, err := db.ExecContext(ctx, LedgerTruncate); err != nil {
		return perNotice{}, err
	}
	outbox := filepath.Join(b.cfg.work, "outbox-due")
	if err := os.RemoveAll(outbox); err != nil {
		return perNotice{}, err
	}
	env := []string{"SCAN_CONFIG=" + policy, "SCAN_SENDER=outbox", "SCAN_OUTBOX_DIR=" + outbox}
	r, err := b.scan(ctx, "bench_due", "run", []string{"--now", dueNow.Format(time.RFC3339), "--batch-size", "1000"}, env)
	if err != nil {
		return perNotice{}, err
	}
	if r.int("sent") != want {
		return perNotice{}, fmt.Errorf("%s: the pass sent %d, want %d", name, r.int("sent"), want)
	}
	return perNotice{wall: r.wall, cpu: r.cpu + r.pgCPU}, nil
}
