package backfill

import (
	"context"
	"io"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// Notices returns the ledger rows of recs: each record's notice key,
// derived by k from its business tuple, and the Message-ID a pass would
// have given it at messageIDDomain (without angle brackets), so that a
// later pass finds the notice already sent and reconcile finds it by
// Message-ID. k is not shared: Notices is safe for concurrent use when
// each caller has its own Keyer (notice.Keyer.Clone).
func Notices(recs []Record, k *notice.Keyer, messageIDDomain string) []ledger.Backfilled {
	bs := make([]ledger.Backfilled, len(recs))
	for i, r := range recs {
		key := k.Key(r.Tuple)
		bs[i] = ledger.Backfilled{Key: key, Tuple: r.Tuple, SentAt: r.SentAt, MessageID: notice.MessageID(key, messageIDDomain)}
	}
	return bs
}

// Import writes bs into the ledger as sent, recorded as run runID, in one
// transaction (ledger.Backfill under ledger.WithTx): a failed import
// writes nothing. It returns how many rows it inserted; the rest were
// already in the ledger (by key or by business tuple) and are left as
// they are.
func Import(ctx context.Context, db *sqlx.DB, runID string, bs []ledger.Backfilled) (inserted int, err error) {
	err = ledger.WithTx(ctx, db, func(tx *sqlx.Tx) error {
		var err error
		inserted, err = ledger.Backfill(ctx, tx, runID, bs)
		return err
	})
	return inserted, err
}

// Batch is a validated file's notices (Prepare), ready to Import.
type Batch struct {
	Sends   int                 // the file's lines of sends
	Notices []ledger.Backfilled // one per notice (Unique), keyed
}

// Prepare reads and validates the whole file r (ReadSends; a bad line is
// a *LineError and nothing should be written), keeps one record per
// notice (a legacy sender that sent a notice twice wrote it twice: one
// row) and keys them (Notices).
func Prepare(r io.Reader, k *notice.Keyer, messageIDDomain string) (Batch, error) {
	sends, err := ReadSends(r)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Sends: len(sends), Notices: Notices(Unique(sends), k, messageIDDomain)}, nil
}

// Report is what `scan backfill` prints: the file's lines, its notices,
// those inserted and those the ledger already held.
type Report struct {
	AlreadyInLedger int `json:"already_in_ledger"`
	Inserted        int `json:"inserted"`
	Lines           int `json:"lines"`
	Notices         int `json:"notices"`
}

// Import writes b as run runID (Import) and reports what it did.
func (b Batch) Import(ctx context.Context, db *sqlx.DB, runID string) (Report, error) {
	n, err := Import(ctx, db, runID, b.Notices)
	if err != nil {
		return Report{}, err
	}
	return Report{AlreadyInLedger: len(b.Notices) - n, Inserted: n, Lines: b.Sends, Notices: len(b.Notices)}, nil
}
