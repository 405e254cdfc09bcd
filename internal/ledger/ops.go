package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/notice"
)

// BySubscription returns every ledger row of one subscription.
func BySubscription(ctx context.Context, db sqlx.QueryerContext, subscriptionID string) ([]Row, error) {
	var rows []Row
	if err := sqlx.SelectContext(ctx, db, &rows, noticeListBySubscription, subscriptionID); err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	return rows, nil
}

// Get returns the row of key, or ErrNotFound.
func Get(ctx context.Context, db sqlx.QueryerContext, key string) (Row, error) {
	var r Row
	err := sqlx.GetContext(ctx, db, &r, noticeGet, key)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("get %s: %w", notice.Short(key), err)
	}
	return r, nil
}

// Quarantine returns up to limit claims with no recorded outcome that were
// claimed before before, oldest first.
func Quarantine(ctx context.Context, db sqlx.QueryerContext, before time.Time, limit int) ([]Row, error) {
	var rows []Row
	if err := sqlx.SelectContext(ctx, db, &rows, noticeListQuarantine, before.UTC(), limit); err != nil {
		return nil, fmt.Errorf("quarantine: %w", err)
	}
	return rows, nil
}

// QuarantineCount counts the claims with no recorded outcome that were
// claimed before before: all that Quarantine would list without a limit.
func QuarantineCount(ctx context.Context, db sqlx.QueryerContext, before time.Time) (int, error) {
	var n int
	if err := sqlx.GetContext(ctx, db, &n, noticeCountQuarantine, before.UTC()); err != nil {
		return 0, fmt.Errorf("quarantine count: %w", err)
	}
	return n, nil
}

// QuarantineStats is the size of the quarantine and its oldest claim.
type QuarantineStats struct {
	Count  int        `db:"count"`
	Oldest *time.Time `db:"oldest"`
}

// QuarantineSize counts claims without an outcome that belong to runs
// other than exceptRun (pass the current run's id to leave its own
// in-flight claims out, or "" for all).
func QuarantineSize(ctx context.Context, db sqlx.QueryerContext, exceptRun string) (QuarantineStats, error) {
	var s QuarantineStats
	if err := sqlx.GetContext(ctx, db, &s, noticeQuarantineStats, exceptRun); err != nil {
		return s, fmt.Errorf("quarantine size: %w", err)
	}
	return s, nil
}

// TupleKey is a stored key with its business tuple.
type TupleKey struct {
	Key            string    `db:"notice_key"`
	SubscriptionID string    `db:"subscription_id"`
	Kind           string    `db:"kind"`
	PeriodStart    time.Time `db:"period_start"`
	Revision       int       `db:"revision"`
}

// Recent returns the keys and tuples of up to n rows of the latest
// billing periods that hold any: it looks in the months newest first
// (the DEFAULT partition's rows are not looked at).
func Recent(ctx context.Context, db sqlx.QueryerContext, n int) ([]TupleKey, error) {
	parts, err := Partitions(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("recent keys: %w", err)
	}
	var out []TupleKey
	for i := len(parts) - 1; i >= 0 && len(out) < n; i-- {
		var got []TupleKey
		if err := sqlx.SelectContext(ctx, db, &got, noticeListRecent, parts[i].From, parts[i].To, n-len(out)); err != nil {
			return nil, fmt.Errorf("recent keys: %w", err)
		}
		out = append(out, got...)
	}
	return out, nil
}

// Decision is an operator's or a reconciliation's ruling on one row.
type Decision struct {
	Key    string
	To     State     // Sent or Retry
	From   []State   // states the row may be in; the change is refused otherwise
	By     string    // who decided
	Reason string    // why
	At     time.Time // when
	SentAt time.Time // for To == Sent: when it went out, if known

	// Set by Settle only: the event kind recorded as settled_by (an
	// operator's decision records SettledByOperator), the attempt the row
	// must still be at, and whether sent_at is cleared (an acceptance
	// overruled by "not sent").
	settledBy   string
	attempt     int
	clearSentAt bool
}

// Resolve applies d with its audit row and returns the state the row had.
// ErrNotFound for an unknown key; ErrStateChanged when the row is not in
// one of d.From. It locks the row first (SELECT ... FOR UPDATE) and keeps
// the lock until the caller's transaction tx ends (WithTx; ResolveKey
// does both).
func Resolve(ctx context.Context, tx *sqlx.Tx, d Decision) (from State, err error) {
	var r Row
	if err := sqlx.GetContext(ctx, tx, &r, noticeLockForResolve, d.Key); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return "", ErrNotFound
		}
		return "", fmt.Errorf("resolve %s: %w", notice.Short(d.Key), err)
	}
	from = r.State
	allowed := false
	for _, s := range d.From {
		allowed = allowed || s == r.State
	}
	if !allowed {
		return from, fmt.Errorf("%w: %s is %s", ErrStateChanged, notice.Short(d.Key), r.State)
	}
	return from, resolveLocked(ctx, tx, d, r.State, r.PeriodStart)
}

func resolveLocked(ctx context.Context, tx *sqlx.Tx, d Decision, from State, period time.Time) error {
	sentAt := ""
	if d.To == Sent {
		at := d.SentAt
		if at.IsZero() {
			at = d.At
		}
		sentAt = at.UTC().Format(tsLayout)
	}
	note := "resolved " + string(from) + " -> " + string(d.To) + " by " + d.By + ": " + d.Reason
	settledBy, attempt := d.settledBy, any(nil)
	if settledBy == "" {
		settledBy = SettledByOperator
	}
	if d.attempt > 0 {
		attempt = d.attempt
	}
	res, err := tx.ExecContext(ctx, noticeResolve, d.Key, string(d.To), sentAt, note, d.At.UTC(), string(from),
		settledBy, attempt, d.clearSentAt)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", notice.Short(d.Key), err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%w: %s", ErrStateChanged, notice.Short(d.Key))
	}
	if from == d.To {
		return nil // only settled_by changed: no decision to record
	}
	if _, err := tx.ExecContext(ctx, noticeResolutionInsert, d.Key, string(from), string(d.To), d.By, d.Reason, d.At.UTC(), period.Format("2006-01-02")); err != nil {
		return fmt.Errorf("record resolution of %s: %w", notice.Short(d.Key), err)
	}
	return nil
}

// Backfilled is one notice that an earlier system already sent.
type Backfilled struct {
	Key            string
	SubscriptionID string
	Kind           string
	PeriodStart    time.Time
	Revision       int
	SentAt         time.Time
	MessageID      string
}

// Backfill inserts notices as sent and returns how many were inserted; the
// rest were already in the ledger. It writes in chunks of 1000, all in
// the caller's transaction tx (WithTx), so that a failed import writes
// nothing.
func Backfill(ctx context.Context, tx *sqlx.Tx, runID string, bs []Backfilled) (inserted int, err error) {
	for start := 0; start < len(bs); start += 1000 {
		end := min(start+1000, len(bs))
		chunk := bs[start:end]
		n := len(chunk)
		keys, subs, kinds, periods, revs, sent, msg := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		for i, b := range chunk {
			keys[i], subs[i], kinds[i] = b.Key, b.SubscriptionID, b.Kind
			periods[i] = b.PeriodStart.Format("2006-01-02")
			revs[i] = strconv.Itoa(b.Revision)
			sent[i] = b.SentAt.UTC().Format(tsLayout)
			msg[i] = b.MessageID
		}
		if err := ensurePartitions(ctx, tx, periods); err != nil {
			return 0, fmt.Errorf("backfill: %w", err)
		}
		var got []string
		if err := sqlx.SelectContext(ctx, tx, &got, noticeBackfill, pq.Array(keys), pq.Array(subs), pq.Array(kinds),
			pq.Array(periods), pq.Array(revs), pq.Array(sent), pq.Array(msg), runID); err != nil {
			return 0, fmt.Errorf("backfill: %w", err)
		}
		inserted += len(got)
	}
	return inserted, nil
}

// ClaimedByRun returns the keys of run runID still in state claimed.
func ClaimedByRun(ctx context.Context, db sqlx.QueryerContext, runID string) ([]string, error) {
	var keys []string
	if err := sqlx.SelectContext(ctx, db, &keys, noticeListClaimedByRun, runID); err != nil {
		return nil, fmt.Errorf("claims of run: %w", err)
	}
	return keys, nil
}
