package backfill

import (
	"context"

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
