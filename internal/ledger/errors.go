package ledger

import "errors"

// The ledger's sentinel errors, all of them. A caller tells a cause with
// errors.Is, never by the text: some come wrapped with a detail (the
// key's first 12 characters, the run, what was wrong with a decision).
//
// Prune's refusal is not a sentinel: it is a *ClaimedError, which names
// the months and claims that stand in its way.
var (
	// ErrNotFound: no ledger row has the key (Get; Resolve and
	// ResolveKey).
	ErrNotFound = errors.New("no ledger row with that key")

	// ErrStateChanged: the row was not in a state that allows the change:
	// a compare-and-set lost to a pass, a reconcile or another operator,
	// or the row is in a final state (Resolve and ResolveKey; ResolveRun
	// skips such a row).
	ErrStateChanged = errors.New("ledger row is not in a state that allows this change")

	// ErrInvalidDecision: a ruling that is not one of the three, or a
	// decision without its author or reason (NewDecision).
	ErrInvalidDecision = errors.New("invalid decision")

	// ErrNoClaims: the run has no claim left without an outcome
	// (ResolveRun).
	ErrNoClaims = errors.New("no claims without an outcome")

	// ErrRestored: the ledger's database was restored or failed over since
	// the last pass it knows of (a new WAL timeline, or a WAL position
	// behind the last recorded): claims may be lost with their notices
	// sent, so a pass refuses to claim until `scan recover` (CheckPass,
	// as a *RestoredError).
	ErrRestored = errors.New("the ledger's database was restored or failed over since the last pass")

	// ErrNotMigrated: the database has no notice_ledger table; run
	// `scan migrate` (Probe).
	ErrNotMigrated = errors.New("the database has no notice_ledger table: run `scan migrate` first")
)
