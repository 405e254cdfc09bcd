package ledger

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
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
	n := len(outs)
	keys, states, sentAt, prov, digests, errs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	senders := make([]string, n)
	at, lens := make([]int, n), make([]int, n)
	dict, err := MessageDict()
	if err != nil {
		return 0, fmt.Errorf("record outcomes: %w", err)
	}
	bodies, err := compressMessages(outs)
	if err != nil {
		return 0, fmt.Errorf("record outcomes: %w", err)
	}
	size := 0
	for _, b := range bodies {
		size += len(b)
	}
	all := make([]byte, 0, size)
	for i, b := range bodies {
		at[i], lens[i] = len(all)+1, len(b)
		all = append(all, b...)
	}
	var lo, hi time.Time
	everyMonth := false
	for i, o := range outs {
		keys[i], states[i], prov[i], errs[i], senders[i] = o.Key, string(o.State), o.ProviderID, o.Error, o.Sender
		if !o.SentAt.IsZero() {
			sentAt[i] = o.SentAt.UTC().Format(tsLayout)
		}
		if len(o.Digest) > 0 {
			digests[i] = hex.EncodeToString(o.Digest)
		}
		switch p := o.PeriodStart; {
		case p.IsZero():
			everyMonth = true
		case lo.IsZero():
			lo, hi = p, p
		case p.Before(lo):
			lo = p
		case p.After(hi):
			hi = p
		}
	}
	var from, to any // NULL: every month
	if !everyMonth {
		first := time.Date(lo.Year(), lo.Month(), 1, 0, 0, 0, 0, time.UTC)
		last := time.Date(hi.Year(), hi.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		from, to = first.Format(dateLayout), last.Format(dateLayout)
	}
	var changed int64
	err = WithTx(ctx, db, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, noticeOutcomePlan); err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, noticeRecordOutcome, pq.Array(keys), pq.Array(states), pq.Array(sentAt),
			pq.Array(prov), pq.Array(digests), pq.Array(errs), from, to, runID, now.UTC(), all, dict.ID, pq.Array(senders), pq.Array(at), pq.Array(lens))
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
