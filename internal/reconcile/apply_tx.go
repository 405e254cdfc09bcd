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
		provider = "jsonl"
	}
	res := Result{Events: map[ledger.EventKind]int{}, Tally: map[Tally]int{}}
	var changes []ledger.Change
	batch := make([]ledger.Settlement, 0, min(size, DefaultBatchSize))
	flush := func() error {
		sr, err := ledger.Settle(ctx, tx, opt.By, now().UTC(), batch)
		if err != nil {
			return err
		}
		changes = append(changes, sr.Changed...)
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
	res.Tally[Tally{provider, ledger.KindOther, "irrelevant"}] += st.Irrelevant
	res.Tally[Tally{provider, ledger.KindOther, "malformed"}] += st.Malformed + st.Oversized
	return res, changes, err
}
