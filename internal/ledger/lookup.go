package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/notice"
)

// Look-ups: what operators' commands and a pass's checks read from the
// ledger. Each is one statement (Recent lists the partitions, then reads
// one month at a time) and writes nothing.

// BySubscription returns every ledger row of one subscription.
func BySubscription(ctx context.Context, db sqlx.QueryerContext, subscriptionID string) ([]Row, error) {
	var rows []Row
	if err := sqlx.SelectContext(ctx, db, &rows, noticeListBySubscription, subscriptionID); err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	return withDelivery(rows), nil
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
	r.Delivery = r.DeliveryOf()
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

// ClaimedByRun returns the keys of run runID still in state claimed.
func ClaimedByRun(ctx context.Context, db sqlx.QueryerContext, runID string) ([]string, error) {
	var keys []string
	if err := sqlx.SelectContext(ctx, db, &keys, noticeListClaimedByRun, runID); err != nil {
		return nil, fmt.Errorf("claims of run: %w", err)
	}
	return keys, nil
}

// RetryOldest returns when the oldest row in state retry was first
// claimed, nil when no row is in retry.
func RetryOldest(ctx context.Context, db sqlx.QueryerContext) (*time.Time, error) {
	var t *time.Time
	if err := sqlx.GetContext(ctx, db, &t, noticeRetryOldest); err != nil {
		return nil, fmt.Errorf("oldest retry: %w", err)
	}
	return t, nil
}
