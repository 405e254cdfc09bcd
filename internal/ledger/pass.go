package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Passes and receipts (sql/0025): what `scan status` reads besides the
// ledger's rows. A pass records its start and its end (PassStarted,
// PassEnded); the receiver records the last request it committed per
// provider (ReceiptRecord).

// ReadSnapshot runs fn in one read-only REPEATABLE READ transaction, so
// that every statement fn makes reads the same snapshot, with JIT
// compilation off (statusSession); it always rolls back (nothing to
// commit). For `scan status`.
func ReadSnapshot(ctx context.Context, db *sqlx.DB, fn func(tx *sqlx.Tx) error) error {
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = rollback(tx) }()
	if _, err := tx.ExecContext(ctx, statusSession); err != nil {
		return fmt.Errorf("status session: %w", err)
	}
	return fn(tx)
}

// Pass is one row of notice_pass: a pass of one shard.
type Pass struct {
	RunID     string         `db:"run_id" json:"run_id"`
	Shard     int            `db:"shard" json:"shard"`
	Shards    int            `db:"shards" json:"shards"`
	StartedAt time.Time      `db:"started_at" json:"started_at"`
	EndedAt   *time.Time     `db:"ended_at" json:"ended_at"` // nil: running, or killed before its end
	Completed bool           `db:"completed" json:"completed"`
	Error     string         `db:"error" json:"error,omitempty"`
	Summary   map[string]int `db:"-" json:"summary"` // counts by result
	RawSum    string         `db:"summary" json:"-"`
}

// PassStarted records that the pass runID of shard i of n started at now.
func PassStarted(ctx context.Context, db sqlx.ExecerContext, runID string, i, n int, now time.Time) error {
	if _, err := db.ExecContext(ctx, passStart, runID, i, n, now.UTC()); err != nil {
		return fmt.Errorf("record pass start: %w", err)
	}
	return nil
}

// PassEnded records the end of the pass runID at now, with its counts by
// result: completed when failure is empty, else failure says why (the
// caller's redacted error text, as it printed it).
func PassEnded(ctx context.Context, db sqlx.ExecerContext, runID, failure string, counts map[string]int, now time.Time) error {
	sum, err := json.Marshal(counts)
	if err != nil {
		return fmt.Errorf("record pass end: %w", err)
	}
	var msg *string
	if failure != "" {
		msg = &failure
	}
	if _, err := db.ExecContext(ctx, passEnd, runID, now.UTC(), failure == "", msg, string(sum)); err != nil {
		return fmt.Errorf("record pass end: %w", err)
	}
	return nil
}

// LastPasses returns the last pass started of each shard, by shard.
func LastPasses(ctx context.Context, db sqlx.QueryerContext) ([]Pass, error) {
	var ps []Pass
	if err := sqlx.SelectContext(ctx, db, &ps, passLastByShard); err != nil {
		return nil, fmt.Errorf("last passes: %w", err)
	}
	for i := range ps {
		if err := json.Unmarshal([]byte(ps[i].RawSum), &ps[i].Summary); err != nil {
			return nil, fmt.Errorf("last passes: summary of %s: %w", ps[i].RunID, err)
		}
	}
	return ps, nil
}

// Receipt is the last request the receiver committed for a provider.
type Receipt struct {
	Provider    string    `db:"provider" json:"provider"`
	CommittedAt time.Time `db:"committed_at" json:"committed_at"`
	Events      int64     `db:"events" json:"events"` // events its committed requests carried (replays included)
}

// ReceiptRecord records that the receiver committed a request of
// provider carrying events at now. Call it after the request's
// transaction committed, outside it.
func ReceiptRecord(ctx context.Context, db sqlx.ExecerContext, provider string, events int, now time.Time) error {
	if _, err := db.ExecContext(ctx, receiptRecord, provider, now.UTC(), events); err != nil {
		return fmt.Errorf("record receipt: %w", err)
	}
	return nil
}

// Receipts returns the last request committed per provider, by provider.
func Receipts(ctx context.Context, db sqlx.QueryerContext) ([]Receipt, error) {
	var rs []Receipt
	if err := sqlx.SelectContext(ctx, db, &rs, receiptList); err != nil {
		return nil, fmt.Errorf("receipts: %w", err)
	}
	return rs, nil
}

// RetryCount counts the rows in state retry.
func RetryCount(ctx context.Context, db sqlx.QueryerContext) (int, error) {
	var n int
	if err := sqlx.GetContext(ctx, db, &n, noticeCountRetry); err != nil {
		return 0, fmt.Errorf("count retry: %w", err)
	}
	return n, nil
}

// UnreachedCounts are the counts of UnreachedSince.
type UnreachedCounts struct {
	Missed      int `db:"missed"`      // rows whose window closed unsent
	Undelivered int `db:"undelivered"` // notices that reached the customer by no channel
}

// UnreachedSince counts the missed rows and the undelivered notices
// (Undelivered's, less those in quarantine) that changed at or after
// since, through the partial index of the rows that did not go out.
func UnreachedSince(ctx context.Context, db sqlx.QueryerContext, since time.Time) (UnreachedCounts, error) {
	var c UnreachedCounts
	if err := sqlx.GetContext(ctx, db, &c, noticeCountUnreachedSince, since.UTC()); err != nil {
		return UnreachedCounts{}, fmt.Errorf("count unreached: %w", err)
	}
	return c, nil
}
