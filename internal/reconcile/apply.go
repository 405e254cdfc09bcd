package reconcile

import (
	"context"
	"io"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// DefaultBatchSize is how many settlements Apply applies per transaction
// when Options.BatchSize is 0.
const DefaultBatchSize = 1000

// Options configure Apply. The zero value reads jsonl, records no author
// and applies DefaultBatchSize settlements per transaction at time.Now.
type Options struct {
	Format    string           // one of Formats; "" is jsonl
	By        string           // recorded as the author of each change
	BatchSize int              // settlements per transaction; 0 is DefaultBatchSize
	Now       func() time.Time // read once per batch, recorded as when; nil is time.Now
}

// Result is what Apply read and what it changed.
type Result struct {
	Stats         // what the reader saw (ReadFormat)
	Settled   int // rows whose state an event changed (overruled included)
	Overruled int // rows settled sent from an acceptance that "not sent" moved to retry or failed
	Unknown   int // events that matched no notice (or an attempt it never had)
	// KeptUnknown counts the events among Unknown kept as the second
	// witness (ledger.SettleResult.KeptUnknown): a claim later minted for
	// their key is recorded sent from them instead of being sent.
	KeptUnknown int
	Unchanged   int // events kept as evidence only: recorded or duplicate
	Duplicate   int // events already kept (replays); counted in Unchanged too
	Stale       int // events of an earlier attempt: they changed nothing
	// Events counts the usable events read, by kind (ledger.EventKind).
	Events map[ledger.EventKind]int
	// Tally counts every event by what it was and what it did, for the
	// metric scan_reconcile_events_total; payloads that were malformed,
	// oversized or irrelevant are counted under event "other".
	Tally map[Tally]int
}

// Tally is one label set of scan_reconcile_events_total.
type Tally struct {
	Provider string           // the format read: jsonl, ses, sendgrid, mailgun or postmark
	Event    ledger.EventKind // what the event says
	Result   string           // a ledger.Result, or ResultIrrelevant or ResultMalformed
}

// The results of a payload that settles nothing, beside the ledger's
// (ledger.Results), in Tally.Result.
const (
	ResultIrrelevant = "irrelevant" // a payload that proves nothing of a notice (Stats.Irrelevant)
	ResultMalformed  = "malformed"  // a payload not readable, or over the size limit
)

// Results lists every value of Tally.Result: the ledger's results, then
// ResultIrrelevant and ResultMalformed.
var Results = append(resultNames(ledger.Results), ResultIrrelevant, ResultMalformed)

func resultNames(rs []ledger.Result) []string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return s
}

// Apply reads the events in r (ReadFormat), names the kind of each
// (classify), and applies them to the notices they name (ledger.Settle:
// each to its own attempt, evidence kept), in batches of opt.BatchSize
// events, each batch in a transaction of its own: memory stays bounded
// whatever the size of r, and a batch once committed stays so if a later
// one fails. changed, when not nil, is called with each change once its
// batch has committed; an error from it, from the reader or from the
// ledger stops Apply. Apply is safe to run while a pass records outcomes:
// a claim the pass settled first is left as the pass recorded it.
func Apply(ctx context.Context, db *sqlx.DB, r io.Reader, opt Options, changed func(ledger.Change) error) (Result, error) {
	return applyBatches(r, opt, func(now time.Time, batch []ledger.Settlement) (ledger.SettleResult, error) {
		var sr ledger.SettleResult
		err := ledger.WithTx(ctx, db, func(tx *sqlx.Tx) error {
			var err error
			sr, err = ledger.Settle(ctx, tx, opt.By, now, batch)
			return err
		})
		if err != nil {
			return sr, err
		}
		for _, c := range sr.Changed {
			if changed != nil {
				if err := changed(c); err != nil {
					return sr, err
				}
			}
		}
		return sr, nil
	})
}

// applyBatches reads the events in r as opt.Format, classifies each and
// hands them to settle in batches of opt.BatchSize (at opt.Now, read once
// per batch), counting what each batch did: the one reading and counting
// loop of Apply (a transaction per batch) and ApplyTx (the caller's).
func applyBatches(r io.Reader, opt Options, settle func(now time.Time, batch []ledger.Settlement) (ledger.SettleResult, error)) (Result, error) {
	size := opt.BatchSize
	if size <= 0 {
		size = DefaultBatchSize
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	provider := opt.Format
	if provider == "" {
		provider = FormatJSONL
	}
	res := Result{Events: map[ledger.EventKind]int{}, Tally: map[Tally]int{}}
	batch := make([]ledger.Settlement, 0, min(size, DefaultBatchSize))
	flush := func() error {
		sr, err := settle(now().UTC(), batch)
		if err != nil {
			return err
		}
		res.add(provider, batch, sr)
		batch = batch[:0]
		return nil
	}
	st, err := ReadFormat(r, opt.Format, func(s ledger.Settlement) error {
		classify(&s)
		batch = append(batch, s)
		if len(batch) >= size {
			return flush()
		}
		return nil
	})
	res.Stats = st
	if err == nil {
		err = flush()
	}
	res.Tally[Tally{provider, ledger.KindOther, ResultIrrelevant}] += st.Irrelevant
	res.Tally[Tally{provider, ledger.KindOther, ResultMalformed}] += st.Malformed + st.Oversized
	return res, err
}

// add counts what one batch did.
func (res *Result) add(provider string, batch []ledger.Settlement, sr ledger.SettleResult) {
	res.Unknown += sr.Unknown
	res.KeptUnknown += sr.KeptUnknown
	res.Unchanged += sr.Unchanged
	res.Stale += sr.Stale
	res.Settled += len(sr.Changed)
	for i, s := range batch {
		r := sr.Each[i]
		res.Events[s.Kind]++
		res.Tally[Tally{provider, s.Kind, string(r)}]++
		switch r {
		case ledger.ResultOverruled:
			res.Overruled++
		case ledger.ResultDuplicate:
			res.Duplicate++
		}
	}
}
