package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/usage"
)

// Resolution is one `scan resolve`: an operator's decision (exactly one
// of Sent, NotSent, Retry) on the claim of Key, or on every claim of RunID
// that still has no outcome, with why and who.
type Resolution struct {
	Key, RunID           string
	Sent, NotSent, Retry bool
	Reason, By           string
}

// Decision checks r without I/O and returns its decision, decided at.
func (r Resolution) Decision(at time.Time) (ledger.Decision, error) {
	byRun := r.RunID != "" && r.Key == ""
	if !byRun && (r.RunID != "" || !notice.ValidKey(r.Key)) {
		return ledger.Decision{}, usage.Errorf("KEY", "exactly one notice key (64 lower-case hex characters), or --run RUN_ID, is required")
	}
	var ruling ledger.Ruling
	n := 0
	for _, f := range []struct {
		set bool
		r   ledger.Ruling
	}{{r.Sent, ledger.RulingSent}, {r.NotSent, ledger.RulingNotSent}, {r.Retry, ledger.RulingRetry}} {
		if f.set {
			ruling = f.r
			n++
		}
	}
	switch {
	case n != 1:
		return ledger.Decision{}, usage.Errorf("decision", "give exactly one of --sent, --not-sent, --retry")
	case strings.TrimSpace(r.Reason) == "":
		return ledger.Decision{}, usage.Errorf("--reason", "required: say why, it is recorded with the decision")
	case r.By == "":
		return ledger.Decision{}, usage.Errorf("--by", "required when $USER is not set")
	}
	return ledger.NewDecision(ruling, r.Key, r.By, r.Reason, at)
}

// Resolve applies d to the claim of r.Key, or to each claim of r.RunID
// without an outcome, calling change with each change as it is committed;
// it returns how many changed. A key or run that matches nothing is an
// error, a row in a state d does not apply to a *FieldError about KEY.
func Resolve(ctx context.Context, db *sqlx.DB, r Resolution, d ledger.Decision, change func(key string, from ledger.State) error) (int, error) {
	if r.RunID != "" {
		n, err := ledger.ResolveRun(ctx, db, r.RunID, d, change)
		if errors.Is(err, ledger.ErrNoClaims) {
			return 0, fmt.Errorf("resolve: run %q has no claims without an outcome", r.RunID)
		}
		return n, err
	}
	from, err := ledger.ResolveKey(ctx, db, d)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return 0, fmt.Errorf("resolve: no ledger row has key %s", notice.Short(r.Key))
	case errors.Is(err, ledger.ErrStateChanged):
		return 0, usage.Errorf("KEY", "%v; allowed from %v", err, d.From)
	case err != nil:
		return 0, err
	}
	return 1, change(r.Key, from)
}
