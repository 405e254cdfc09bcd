package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Outcome is what became of one claimed notice.
type Outcome struct {
	Key string
	// PeriodStart is the claim's billing period. Given, the outcome is
	// found in that month's partition alone; zero, every month is probed.
	PeriodStart time.Time
	State       State // Sent, Retry, Failed; Claimed for an unknown outcome
	SentAt      time.Time
	ProviderID  string
	// Attempts is how many times the pass handed the message over within
	// this claim (the dispatcher's retries); logged, not stored: the
	// ledger's attempts counts claims (Won.Attempt).
	Attempts int
	// Digest is the SHA-256 of the exact message handed to the provider,
	// stored with the outcome (an ambiguous one too); nil when nothing was
	// handed over.
	Digest []byte
	// Message is the exact message handed to the provider (the bytes
	// Digest is the SHA-256 of), kept compressed in the ledger row under
	// the claim's attempt when the outcome is recorded: proof of notice
	// (MessageOf). Nil keeps nothing.
	Message []byte
	// Kept, when set, is Message already compressed by KeepMessage (in the
	// dispatcher's send workers, off the recorder's serial path): stored
	// as is instead of compressing Message again.
	Kept  []byte
	Error string
	// Sender names the sender the attempt went through ("ses", "smtp",
	// ...): the Failover's pick (send.Receipt.Sender, send.SenderOf), or
	// the single sender's name; stored in the same statement as the
	// outcome. Empty when the attempt reached no sender.
	Sender string
}

// RecordOutcomes records a batch of outcomes of run runID in one statement,
// in a transaction of its own, and returns how many rows changed. The same
// statement keeps each changed row's Message (proof of notice). Rows no
// longer claimed by that run (resolved by an operator meanwhile) are left
// alone.
func RecordOutcomes(ctx context.Context, db *sqlx.DB, runID string, now time.Time, outs []Outcome) (int64, error) {
	if len(outs) == 0 {
		return 0, nil
	}
	dict, err := MessageDict()
	if err != nil {
		return 0, fmt.Errorf("record outcomes: %w", err)
	}
	bodies, err := compressMessages(outs)
	if err != nil {
		return 0, fmt.Errorf("record outcomes: %w", err)
	}
	cols, all := outcomeArrays(outs, bodies)
	from, to := outcomeMonths(outs)
	var changed int64
	err = WithTx(ctx, db, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, noticeOutcomePlan); err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, noticeRecordOutcome, cols[0], cols[1], cols[2],
			cols[3], cols[4], cols[5], from, to, runID, now.UTC(), all, dict.ID, cols[6], cols[7], cols[8])
		if err != nil {
			return err
		}
		changed, err = r.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record outcomes: %w", err)
	}
	return changed, nil
}

// outcomeArrays returns noticeRecordOutcome's nine column parameters as
// binary arrays (pgArray) in one buffer: $1 keys, $2 states (text[]), $3
// sent_at (timestamptz[], NULL for none), $4 provider ids (text[]), $5
// digests (bytea[], NULL for none), $6 errors, $13 senders (text[]), $14
// where each compressed message starts in the messages end to end and $15
// its length (int4[]), in that order; and the messages end to end ($11).
func outcomeArrays(outs []Outcome, bodies [][]byte) ([9]any, []byte) {
	size := 0
	for _, b := range bodies {
		size += len(b)
	}
	all := make([]byte, 0, size)
	var a pgArray
	a.grow(9*arrayHeader + len(outs)*(9*4+64+8+8+32+32+16+4+4+8))
	var out [9]any
	column := func(i int, oid uint32, elem func(o *Outcome, body []byte)) {
		a.begin(oid)
		for j := range outs {
			elem(&outs[j], bodies[j])
		}
		out[i] = a.end()
	}
	column(0, oidText, func(o *Outcome, _ []byte) { a.text(o.Key) })
	column(1, oidText, func(o *Outcome, _ []byte) { a.text(string(o.State)) })
	column(2, oidTimestamptz, func(o *Outcome, _ []byte) { a.timestamptzOrNull(o.SentAt) })
	column(3, oidText, func(o *Outcome, _ []byte) { a.text(o.ProviderID) })
	column(4, oidBytea, func(o *Outcome, _ []byte) {
		if len(o.Digest) == 0 {
			a.null()
		} else {
			a.bytea(o.Digest)
		}
	})
	column(5, oidText, func(o *Outcome, _ []byte) { a.text(o.Error) })
	column(6, oidText, func(o *Outcome, _ []byte) { a.text(o.Sender) })
	column(7, oidInt4, func(_ *Outcome, body []byte) { a.int4(len(all) + 1); all = append(all, body...) })
	column(8, oidInt4, func(_ *Outcome, body []byte) { a.int4(len(body)) })
	return out, all
}

// outcomeMonths returns the first day of the earliest month of the
// outcomes' periods and the first day after the latest (YYYY-MM-DD), or
// NULL and NULL when an outcome has no period (every month is probed).
func outcomeMonths(outs []Outcome) (from, to any) {
	var lo, hi time.Time
	for _, o := range outs {
		switch p := o.PeriodStart; {
		case p.IsZero():
			return nil, nil
		case lo.IsZero():
			lo, hi = p, p
		case p.Before(lo):
			lo = p
		case p.After(hi):
			hi = p
		}
	}
	first := time.Date(lo.Year(), lo.Month(), 1, 0, 0, 0, 0, time.UTC)
	last := time.Date(hi.Year(), hi.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	return first.Format(dateLayout), last.Format(dateLayout)
}
