package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// More sentinel errors, of operator decisions.
var (
	// ErrInvalidDecision: a ruling that is not one of the three, or a
	// decision without its author or reason.
	ErrInvalidDecision = errors.New("invalid decision")
	// ErrNoClaims: the run has no claim left without an outcome.
	ErrNoClaims = errors.New("no claims without an outcome")
)

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
