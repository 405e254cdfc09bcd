package ledger

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// SettledByRecovery is the settled_by of a row that `scan recover` moved
// from retry to sent on the provider's record.
const SettledByRecovery = "recovery"

// RecoverResult says what a batch of the provider's record did, per
// notice (a notice named by several events counts once, under the first
// of the three it falls in).
type RecoverResult struct {
	// Recorded: notices the ledger lacked (kept as the second witness,
	// which the next claim of their key consults) or held claimable (a
	// claim in quarantine, or a retry), now recorded as the events say.
	Recorded int
	// AlreadyKnown: notices the ledger already held settled, or whose
	// evidence it had already kept.
	AlreadyKnown int
	// Unknown: events that name no notice the ledger could ever match
	// (a provider id alone, not the ledger's).
	Unknown int
}

// Recover applies a batch of the provider's record of what went out after
// the ledger's database went back in time, in the caller's transaction:
// as Settle does (a claim in quarantine is settled, an unknown notice's
// events kept as the second witness), and in addition a row in state
// retry that the record shows accepted or delivered, of any attempt (the
// restored row may predate the attempt that went out), becomes sent with
// settled_by recovery and its evidence kept: no pass sends it again.
func Recover(ctx context.Context, tx *sqlx.Tx, by string, now time.Time, ss []Settlement) (RecoverResult, error) {
	var res RecoverResult
	if len(ss) == 0 {
		return res, nil
	}
	find, err := settleRows(ctx, tx, ss)
	if err != nil {
		return res, err
	}
	recorded, known := map[string]bool{}, map[string]bool{}
	var kept evidenceBatch
	var rest []Settlement
	for i, s := range ss {
		s = s.normalized()
		r := find(s)
		if r == nil || r.State != Retry || !(s.Kind == KindAccepted || s.Kind.LeftProvider()) {
			rest = append(rest, s)
			continue
		}
		var sr SettleResult
		if err := settleLost(ctx, tx, by, now, r, s, SettledByRecovery, &sr); err != nil {
			return res, err
		}
		kept.add(i, r, max(s.Attempt, r.current()), s)
		recorded[r.Key[:min(32, len(r.Key))]] = true
	}
	if _, err := kept.insert(ctx, tx, now); err != nil {
		return res, err
	}
	sr, err := Settle(ctx, tx, by, now, rest)
	if err != nil {
		return res, err
	}
	fresh := map[string]bool{}
	for _, k := range sr.freshUnmatched {
		fresh[k] = true
	}
	for i, s := range rest {
		k := Key32(s.Key, s.MessageID)
		switch r := sr.Each[i]; {
		case r == ResultUnknown && k == "":
			res.Unknown++
		case k == "":
			known["provider id "+s.ProviderID] = true
		case r == ResultSettled || r == ResultOverruled || (r == ResultUnknown && fresh[k]):
			recorded[k] = true
		default:
			known[k] = true
		}
	}
	for k := range known {
		if !recorded[k] {
			res.AlreadyKnown++
		}
	}
	res.Recorded = len(recorded)
	return res, nil
}
