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
	Settled   int // claims settled
	Unknown   int // settlements that matched no ledger row
	Unchanged int // settlements whose row was no longer claimed
}

// Apply reads the events in r (ReadFormat) and settles the quarantined
// claims they prove something about (ledger.Settle), in batches of
// opt.BatchSize settlements, each batch in a transaction of its own:
// memory stays bounded whatever the size of r, and a batch once committed
// stays so if a later one fails. changed, when not nil, is called with
// each change once its batch has committed; an error from it, from the
// reader or from the ledger stops Apply. Apply is safe to run while a
// pass records outcomes: a claim the pass settled first is counted in
// Unchanged.
func Apply(ctx context.Context, db *sqlx.DB, r io.Reader, opt Options, changed func(ledger.Change) error) (Result, error) {
	size := opt.BatchSize
	if size <= 0 {
		size = DefaultBatchSize
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	var res Result
	batch := make([]ledger.Settlement, 0, min(size, DefaultBatchSize))
	flush := func() error {
		var sr ledger.SettleResult
		err := ledger.WithTx(ctx, db, func(tx *sqlx.Tx) error {
			var err error
			sr, err = ledger.Settle(ctx, tx, opt.By, now().UTC(), batch)
			return err
		})
		if err != nil {
			return err
		}
		for _, c := range sr.Changed {
			if changed != nil {
				if err := changed(c); err != nil {
					return err
				}
			}
		}
		res.Unknown += sr.Unknown
		res.Unchanged += sr.Unchanged
		res.Settled += len(sr.Changed)
		batch = batch[:0]
		return nil
	}
	st, err := ReadFormat(r, opt.Format, func(s ledger.Settlement) error {
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
	return res, err
}
