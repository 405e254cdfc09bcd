package reconcile

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// RecordBatch is how many events of a provider's record one transaction
// of Record applies.
const RecordBatch = 1000

// RecordResult is what Record did with a provider's record.
type RecordResult struct {
	Events       int `json:"events"`        // events read
	Recorded     int `json:"recorded"`      // notices the ledger lacked, now recorded as the evidence says
	AlreadyKnown int `json:"already_known"` // notices the ledger already had
	Unknown      int `json:"unknown"`       // events that name no notice the ledger can derive
}

// Record applies a provider's record of what went out (after a restore or
// failover: `scan recover`) with ledger.Recover, in batches of
// RecordBatch, each in its own transaction. read produces the record,
// calling add once per settlement (a file's events, or a provider API's
// answers). The first error stops it; the batches committed before it
// stay, and running it again records nothing twice.
func Record(ctx context.Context, db *sqlx.DB, by string, now func() time.Time, read func(add func(ledger.Settlement) error) error) (RecordResult, error) {
	var rep RecordResult
	batch := make([]ledger.Settlement, 0, RecordBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := ledger.WithTx(ctx, db, func(tx *sqlx.Tx) error {
			r, err := ledger.Recover(ctx, tx, by, now().UTC(), batch)
			rep.Recorded += r.Recorded
			rep.AlreadyKnown += r.AlreadyKnown
			rep.Unknown += r.Unknown
			return err
		})
		rep.Events += len(batch)
		batch = batch[:0]
		return err
	}
	err := read(func(s ledger.Settlement) error {
		batch = append(batch, s)
		if len(batch) >= RecordBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return rep, err
}
