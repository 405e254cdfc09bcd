package reconcile

import (
	"context"
	"io"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// ApplyTx is Apply inside a transaction the caller owns: it reads the
// events in r (ReadFormat), names the kind of each (classify) and applies
// them to the notices they name (ledger.Settle), opt.BatchSize settlements
// per statement, all in tx. Nothing it did is durable until the caller
// commits tx; the changes it returns are those tx will make once
// committed. A caller that also records something of its own in tx (the
// receiver's replay tokens) gets both or neither.
//
// It counts what it read and did as Apply does (Result), malformed,
// oversized and irrelevant payloads included: those are never an error;
// the caller decides whether they make the whole request unusable. Only a
// read error or a ledger error stops it, and then tx must be rolled back.
// Memory is bounded by one batch of settlements plus what tx holds on the
// server. opt.Now is read once per batch. Safe for concurrent use with
// distinct transactions.
func ApplyTx(ctx context.Context, tx *sqlx.Tx, r io.Reader, opt Options) (Result, []ledger.Change, error) {
	var changes []ledger.Change
	res, err := applyBatches(r, opt, func(now time.Time, batch []ledger.Settlement) (ledger.SettleResult, error) {
		sr, err := ledger.Settle(ctx, tx, opt.By, now, batch)
		changes = append(changes, sr.Changed...)
		return sr, err
	})
	return res, changes, err
}
