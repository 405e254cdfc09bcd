package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
)

// EvidenceDeliveredHalf records a Delivery for every other notice of the
// ledger (what `scan reconcile` leaves after a provider confirmed half of
// a night's notices: delivery_kind, delivery_attempt, sql/0030).
const EvidenceDeliveredHalf = `
UPDATE notice_ledger SET delivery_kind = 'delivered', delivery_attempt = 1
WHERE hashtext(notice_key) % 2 = 0`

// EvidenceAnalyze refreshes the ledger's statistics after the seed.
const EvidenceAnalyze = `VACUUM ANALYZE notice_ledger`

// policyEvidence is policyThroughput's kind with channels [email, sms]:
// the pass's sms sweep reads every email row of an open window and asks
// the carry-on rule (ledger.CarriedOnSQL) of each.
const policyEvidence = `schedule: "0 2 * * *"
message_id_domain: notices.example.com
from: "Example Box <notices@example.com>"
notices:
  - kind: renewal_notice_t72
    open_before: 72h
    close_before: 24h
    channels: [email, sms]
rate:
  default: {per_second: 10000000, burst: 10000000}
  global: {per_second: 10000000, burst: 10000000}
  sms: {per_second: 1000, burst: 100}
concurrency: 16
`

// evidence measures the pass after the first one (issue 36), the one
// that carries undeliverable notices on to sms, on two ledgers of the same
// N notices sent by email: one with no provider evidence, one with a
// Delivery for half of them. Neither has a notice to carry on, so the
// difference is the cost of the delivery rule itself. Alternated pairs;
// the median ratio is reported.
func (b *bench) evidence(ctx context.Context) error {
	n := b.cfg.suppressionN
	policy, err := b.writePolicy("evidence.yaml", policyEvidence)
	if err != nil {
		return err
	}
	tw := &twilioSink{}
	addr, stopTw, err := tw.serve()
	if err != nil {
		return err
	}
	defer stopTw()
	env := []string{"SCAN_CONFIG=" + policy, "SCAN_SENDER=outbox", "SCAN_OUTBOX_DIR=" + filepath.Join(b.cfg.work, "outbox-evidence"),
		"TWILIO_ACCOUNT_SID=" + channelsAccount, "TWILIO_AUTH_TOKEN=bench-token", "TWILIO_FROM=+15005550006",
		"TWILIO_API_URL=http://" + addr, "SCAN_TWILIO_STATUS_CALLBACK=https://hooks.example.com/events/twilio"}
	names := []string{"bench_evid_none", "bench_evid_half"}
	for _, name := range names {
		if err := b.evidenceSeed(ctx, name, n, env); err != nil {
			return err
		}
	}
	rounds := max(b.cfg.suppressionRounds, 1)
	sum := map[string]result{}
	var wallRatio, pgRatio []float64
	for round := 0; round < rounds; round++ {
		pair := map[string]result{}
		for _, name := range names {
			fmt.Fprintf(b.log, "bench: pass after the first, %d notices sent, %s, round %d\n", n, name, round+1)
			r, err := b.scan(ctx, name, "run", b.runArgs(b.cfg.batches[0]), env)
			if err != nil {
				return err
			}
			if r.int("sent") != 0 || tw.n != 0 {
				return fmt.Errorf("%s: the pass after the first sent %d, texted %d", name, r.int("sent"), tw.n)
			}
			pair[name] = r
			s := sum[name]
			s.wall, s.pgCPU = s.wall+r.wall, s.pgCPU+r.pgCPU
			sum[name] = s
		}
		none, half := pair[names[0]], pair[names[1]]
		wallRatio = append(wallRatio, half.wall.Seconds()/none.wall.Seconds())
		pgRatio = append(pgRatio, half.pgCPU.Seconds()/none.pgCPU.Seconds())
	}
	none, half := sum[names[0]], sum[names[1]]
	b.add(figure{fmt.Sprintf("pass after the first with a Delivery for half of %d notices ([email, sms], %d runs each, alternated)", n, rounds),
		fmt.Sprintf("%.3f s wall, %.3f s PostgreSQL CPU a pass", half.wall.Seconds()/float64(rounds), half.pgCPU.Seconds()/float64(rounds)),
		fmt.Sprintf("no evidence: %.3f s wall, %.3f s PostgreSQL CPU", none.wall.Seconds()/float64(rounds), none.pgCPU.Seconds()/float64(rounds)),
		fmt.Sprintf("median of the pairs: wall %+.1f%%, PostgreSQL CPU %+.1f%%", 100*(median(wallRatio)-1), 100*(median(pgRatio)-1)),
		"at most +3%"})
	return nil
}

// evidenceSeed seeds database name with n due subscriptions (an address
// each, no phone), mails them all in a first pass and, for
// bench_evid_half, records a Delivery for half of them.
func (b *bench) evidenceSeed(ctx context.Context, name string, n int, env []string) error {
	db, err := b.database(ctx, name)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := seedChannels(ctx, db, n, false, b.now); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(b.cfg.work, "outbox-evidence")); err != nil {
		return err
	}
	r, err := b.scan(ctx, name, "run", b.runArgs(b.cfg.batches[0]), env)
	if err != nil {
		return err
	}
	if r.int("sent") != n {
		return fmt.Errorf("%s: first pass sent %d, want %d", name, r.int("sent"), n)
	}
	return evidenceHalf(ctx, db, name == "bench_evid_half")
}

func evidenceHalf(ctx context.Context, db *sql.DB, half bool) error {
	if half {
		if _, err := db.ExecContext(ctx, EvidenceDeliveredHalf); err != nil {
			return fmt.Errorf("evidence: %w", err)
		}
	}
	_, err := db.ExecContext(ctx, EvidenceAnalyze)
	return err
}
