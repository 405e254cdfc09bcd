package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/notice"
)

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
	if _, err := tx.ExecContext(ctx, noticeResolutionInsert, d.Key, string(from), string(d.To), d.By, d.Reason, d.At.UTC(), period.Format(dateLayout)); err != nil {
		return fmt.Errorf("record resolution of %s: %w", notice.Short(d.Key), err)
	}
	return nil
}

// Ruling is an operator's decision on a claim, as `scan resolve` takes it
// (--sent, --not-sent, --retry).
type Ruling string

// The three rulings and what each may change (NewDecision):
const (
	// RulingSent: the notice went out (evidence outside the provider's
	// events). Claimed, retry or failed become sent.
	RulingSent Ruling = "sent"
	// RulingNotSent: the notice certainly did not go out. Claimed becomes
	// retry, so the next pass sends it while its window is open.
	RulingNotSent Ruling = "not-sent"
	// RulingRetry: send it again. Claimed or failed becomes retry.
	RulingRetry Ruling = "retry"
)

// NewDecision returns the decision that ruling r makes on the row of key:
// the state it sets (To) and the states it may set it from (From); a row
// in any other state (sent and missed are final) is refused by Resolve.
// by and reason are recorded with the change: by must not be empty nor
// reason blank; at
// is when it was decided. ErrInvalidDecision otherwise.
func NewDecision(r Ruling, key, by, reason string, at time.Time) (Decision, error) {
	d := Decision{Key: key, By: by, Reason: reason, At: at}
	switch r {
	case RulingSent:
		d.To, d.From = Sent, []State{Claimed, Retry, Failed}
	case RulingNotSent:
		d.To, d.From = Retry, []State{Claimed}
	case RulingRetry:
		d.To, d.From = Retry, []State{Claimed, Failed}
	default:
		return Decision{}, fmt.Errorf("%w: ruling %q is not one of %s, %s, %s", ErrInvalidDecision, r, RulingSent, RulingNotSent, RulingRetry)
	}
	if by == "" {
		return Decision{}, fmt.Errorf("%w: no author", ErrInvalidDecision)
	}
	if strings.TrimSpace(reason) == "" {
		return Decision{}, fmt.Errorf("%w: no reason", ErrInvalidDecision)
	}
	return d, nil
}

// ResolveKey applies d to the row of d.Key in a transaction of its own
// (Resolve under WithTx) and returns the state the row had; the errors are
// Resolve's.
func ResolveKey(ctx context.Context, db *sqlx.DB, d Decision) (from State, err error) {
	err = WithTx(ctx, db, func(tx *sqlx.Tx) error {
		var err error
		from, err = Resolve(ctx, tx, d)
		return err
	})
	return from, err
}

// ResolveRun applies d to every claim of run runID that is still claimed,
// after a crash once reconcile has settled what the provider saw. Whatever
// d.From says, only claimed rows change. Each claim is resolved in a
// transaction of its own, oldest first, and recorded on its own; a claim
// settled meanwhile (by a reconcile or a pass) is skipped. changed, when
// not nil, is called after each commit with the key and the state it had;
// an error from it stops the run. ResolveRun returns how many claims it
// changed, or ErrNoClaims when the run had none to decide.
func ResolveRun(ctx context.Context, db *sqlx.DB, runID string, d Decision, changed func(key string, from State) error) (int, error) {
	keys, err := ClaimedByRun(ctx, db, runID)
	if err != nil {
		return 0, err
	}
	if len(keys) == 0 {
		return 0, fmt.Errorf("run %q: %w", runID, ErrNoClaims)
	}
	d.From = []State{Claimed}
	n := 0
	for _, k := range keys {
		d.Key = k
		from, err := ResolveKey(ctx, db, d)
		if errors.Is(err, ErrStateChanged) {
			continue // settled meanwhile (a reconcile or a pass)
		}
		if err != nil {
			return n, err
		}
		n++
		if changed != nil {
			if err := changed(k, from); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}
