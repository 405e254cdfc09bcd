package ledger

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// SchedulerTryLock takes the schedulers' lock in tx, if no other
// transaction holds it, and reports whether it did. The lock lasts as long
// as tx: the caller keeps tx open for the whole pass and ends it (either
// way) to release the lock. See schedulerLockTry.
func SchedulerTryLock(ctx context.Context, tx sqlx.QueryerContext) (bool, error) {
	var ok bool
	if err := sqlx.GetContext(ctx, tx, &ok, schedulerLockTry); err != nil {
		return false, fmt.Errorf("scheduler lock: %w", err)
	}
	return ok, nil
}

// SchedulerLockAlive returns an error when the lock's transaction tx (and
// with it the lock) is gone: its connection was closed, or the server
// ended it.
func SchedulerLockAlive(ctx context.Context, tx sqlx.QueryerContext) error {
	var one int
	if err := sqlx.GetContext(ctx, tx, &one, schedulerLockAlive); err != nil {
		return fmt.Errorf("scheduler lock: %w", err)
	}
	return nil
}
