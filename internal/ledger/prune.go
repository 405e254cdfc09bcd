package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ClaimedMonth is a month that still holds claims without an outcome.
type ClaimedMonth struct {
	Month string   `db:"month" json:"month"`
	Count int      `db:"count" json:"count"`
	Keys  []string `db:"-" json:"key_prefixes"` // first 12 characters, at most 10
}

// ClaimedError refuses a prune: the months it would remove still hold
// claims whose outcome is unknown (the quarantine), which only reconcile
// or resolve may settle.
type ClaimedError struct {
	Months []ClaimedMonth
}

func (e *ClaimedError) Error() string {
	var b strings.Builder
	b.WriteString("prune refused: periods older than the horizon still hold claims with no recorded outcome (settle them with `scan reconcile` or `scan resolve` first):")
	for _, m := range e.Months {
		fmt.Fprintf(&b, " %s: %d (%s)", m.Month[:7], m.Count, strings.Join(m.Keys, ", "))
	}
	return b.String()
}

// PruneOptions say what to prune.
type PruneOptions struct {
	// Before: every month whose periods all start before it is removed.
	Before time.Time
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
	// LockTimeout bounds the wait for the ledger's lock (default 5s).
	LockTimeout time.Duration
}

// PruneResult is what Prune removed (or, dry, would remove).
type PruneResult struct {
	Removed     []Partition `json:"removed"`
	Resolutions int64       `json:"resolutions"` // decision records removed with them
	Evidence    int64       `json:"evidence"`    // provider events kept on their rows, removed with them
	Shadow      int64       `json:"shadow"`      // shadow passes' rows of periods before the horizon (issue 27)
	// Unmatched counts the events of notices the ledger never held (the
	// second witness) recorded before the horizon, removed with it; a dry
	// run does not count them.
	Unmatched int64 `json:"unmatched_evidence"`
	// Messages counts the messages notice_message kept for proof of notice
	// (issue 37) of the removed months (earlier attempts, and attempts
	// recorded before sql/0036), removed with them. The current attempts'
	// messages are in the ledger rows and go with their months, uncounted
	// like the rows (prune never reads a month).
	Messages int64 `json:"messages"`
}

// Prune removes, in one transaction, the months of the ledger whose
// periods all start before opt.Before: it detaches and drops each month's
// partition and deletes the decisions recorded on its rows; then, in a
// statement of its own, the provider evidence kept on them, the messages
// kept for them (proof of notice), and the
// evidence of notices the ledger never held recorded before opt.Before. It refuses
// with a *ClaimedError, removing nothing, when one of those months still
// holds a claimed row. The DEFAULT partition is never removed.
//
// Safe while a pass runs: it takes ACCESS EXCLUSIVE on notice_ledger (what
// a plain DETACH PARTITION takes) waiting at most opt.LockTimeout, checks
// for claims and detaches under that lock, and commits within
// milliseconds; a pass's statements wait for it and go on. DETACH
// PARTITION CONCURRENTLY would not block them, but it cannot run in a
// transaction (so the check and the removal could not be one), nor at
// all while the table has a DEFAULT partition.
func Prune(ctx context.Context, db *sqlx.DB, opt PruneOptions) (PruneResult, error) {
	if opt.LockTimeout <= 0 {
		opt.LockTimeout = 5 * time.Second
	}
	before := opt.Before.UTC().Format(dateLayout)
	var res PruneResult
	err := WithTx(ctx, db, func(tx *sqlx.Tx) error {
		res = PruneResult{}
		if !opt.DryRun {
			if err := lockForPrune(ctx, tx, opt.LockTimeout); err != nil {
				return err
			}
		}
		var err error
		if res.Removed, err = monthsBefore(ctx, tx, before); err != nil || len(res.Removed) == 0 {
			return err
		}
		// Only the months to remove: a claim of the current month is a
		// pass in flight, none of prune's business.
		if err := checkNoClaims(ctx, tx, res.Removed[len(res.Removed)-1].To); err != nil {
			return err
		}
		if opt.DryRun {
			return nil
		}
		for _, p := range res.Removed {
			n, err := dropMonth(ctx, tx, p)
			if err != nil {
				return err
			}
			res.Resolutions += n
		}
		return nil
	})
	if res.Removed == nil {
		res.Removed = []Partition{}
	}
	if err != nil || opt.DryRun {
		return res, err
	}
	forgetMonths(db) // the claims of db ask for their months again
	// The shadow rows of the same periods, whether or not the ledger has
	// months to remove: beside a legacy sender it may have none; and the
	// unmatched evidence recorded before the horizon.
	if res.Shadow, err = pruneShadow(ctx, db, before); err != nil {
		return res, err
	}
	if err := pruneUnmatched(ctx, db, opt.Before, &res); err != nil || len(res.Removed) == 0 {
		return res, err
	}
	// The evidence of the removed months, after the ledger's lock is gone:
	// a month holds several events per notice, and no pass should wait for
	// their deletion. Nothing reads evidence of a month without rows.
	r, err := db.ExecContext(ctx, noticeEvidencePrune, res.Removed[len(res.Removed)-1].To)
	if err != nil {
		return res, fmt.Errorf("prune: evidence: %w", err)
	}
	res.Evidence, _ = r.RowsAffected()
	// The kept messages, likewise: nothing proves a notice whose row is gone.
	r, err = db.ExecContext(ctx, noticeMessagePrune, res.Removed[len(res.Removed)-1].To)
	if err != nil {
		return res, fmt.Errorf("prune: kept messages: %w", err)
	}
	res.Messages, _ = r.RowsAffected()
	return res, nil
}

// pruneUnmatched removes the evidence of unknown notices recorded before
// the horizon: a claim minted for such a key now would be of a billing
// period prune removes anyway.
func pruneUnmatched(ctx context.Context, db *sqlx.DB, before time.Time, res *PruneResult) error {
	r, err := db.ExecContext(ctx, noticeEvidenceUnmatchedPrune, before.UTC())
	if err != nil {
		return fmt.Errorf("prune: unmatched evidence: %w", err)
	}
	res.Unmatched, _ = r.RowsAffected()
	return nil
}

// lockForPrune takes the ledger's ACCESS EXCLUSIVE lock in tx, waiting at
// most timeout (noticePruneLock).
func lockForPrune(ctx context.Context, tx *sqlx.Tx, timeout time.Duration) error {
	if _, err := tx.ExecContext(ctx, noticePruneLockTimeout, fmt.Sprintf("%dms", timeout.Milliseconds())); err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	if _, err := tx.ExecContext(ctx, noticePruneLock); err != nil {
		return fmt.Errorf("prune: lock the ledger: %w", err)
	}
	return nil
}

// monthsBefore returns the partitions whose periods all start before
// before (YYYY-MM-DD), oldest first.
func monthsBefore(ctx context.Context, db sqlx.QueryerContext, before string) ([]Partition, error) {
	all, err := Partitions(ctx, db)
	if err != nil {
		return nil, err
	}
	var old []Partition
	for _, p := range all {
		if p.To <= before {
			old = append(old, p)
		}
	}
	return old, nil
}

// dropMonth detaches and drops the partition of p and deletes the
// decisions recorded on its rows; it returns how many decisions.
func dropMonth(ctx context.Context, tx *sqlx.Tx, p Partition) (int64, error) {
	name := pq.QuoteIdentifier(p.Name)
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(noticePartitionDetach, name)); err != nil {
		return 0, fmt.Errorf("prune: detach %s: %w", p.Name, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(noticePartitionDrop, name)); err != nil {
		return 0, fmt.Errorf("prune: drop %s: %w", p.Name, err)
	}
	r, err := tx.ExecContext(ctx, noticeResolutionPrune, p.From, p.To)
	if err != nil {
		return 0, fmt.Errorf("prune: decisions of %s: %w", p.Name, err)
	}
	n, _ := r.RowsAffected()
	return n, nil
}

// checkNoClaims returns a *ClaimedError naming the months before before
// that hold claimed rows.
func checkNoClaims(ctx context.Context, db sqlx.QueryerContext, before string) error {
	rows, err := db.QueryxContext(ctx, noticeListClaimedBefore, before, 10)
	if err != nil {
		return fmt.Errorf("prune: look for claims: %w", err)
	}
	defer rows.Close()
	var months []ClaimedMonth
	for rows.Next() {
		var m ClaimedMonth
		if err := rows.Scan(&m.Month, &m.Count, pq.Array(&m.Keys)); err != nil {
			return fmt.Errorf("prune: look for claims: %w", err)
		}
		months = append(months, m)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("prune: look for claims: %w", err)
	}
	if len(months) > 0 {
		return &ClaimedError{Months: months}
	}
	return nil
}
