package ask

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// DefaultLimit is how many claims Reconcile asks about when
// RunConfig.Limit is 0: the oldest, as `scan quarantine` lists them.
const DefaultLimit = 500

// maxRows bounds the quarantine rows one Reconcile reads (claims past the
// provider's retention among them).
const maxRows = 100_000

// RunConfig configures Reconcile. The zero value asks about every claim
// older than nothing, at time.Now, recording no author.
type RunConfig struct {
	By        string           // recorded as the author of each change
	OlderThan time.Duration    // only claims claimed longer ago than this
	Limit     int              // at most this many claims, oldest first; 0 is DefaultLimit
	Now       func() time.Time // read once per claim; nil is time.Now
}

// Result is what Reconcile asked and what it changed.
type Result struct {
	Asked     int                      // claims asked about
	Answered  int                      // claims the provider's record settled or kept as evidence
	NotFound  int                      // claims the provider has no record of past its delay: settled not_sent
	Pending   int                      // claims the provider has no record of yet: still in quarantine
	Unknown   int                      // claims the provider's record cannot tell about: still in quarantine
	Cut       bool                     // the quarantine held more than Limit claims: the rest wait for the next run
	Settled   int                      // rows whose state changed
	Unchanged int                      // settlements kept as evidence only
	Stale     int                      // settlements of an earlier attempt
	Events    map[ledger.EventKind]int // settlements applied, by kind
}

// Reconcile asks p about each claim in quarantine older than
// cfg.OlderThan (ledger.Quarantine, oldest first, at most cfg.Limit) and
// applies each answer by ledger.Settle, one transaction per claim. A claim
// older than the provider's retention (its Retention method, when it has
// one) is Unknown without a request and not counted against the limit.
// changed is called with each change once committed; note, when not nil,
// with each claim and its answer (for the operator's report). An error
// from p (ErrUnsupported included), the ledger or a callback stops it;
// what was committed stays. Reconcile is safe to run while a pass records
// outcomes, as `scan reconcile` is.
func Reconcile(ctx context.Context, db *sqlx.DB, p Provider, cfg RunConfig, changed func(ledger.Change) error, note func(Claim, Answer)) (Result, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	limit := cfg.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	res := Result{Events: map[ledger.EventKind]int{}}
	// Claims older than the provider's record are told Unknown without a
	// request, and do not count against the limit: else a backlog of old
	// claims would keep the newer ones from ever being asked about.
	retention := time.Duration(1<<63 - 1)
	if r, ok := p.(interface{ Retention() time.Duration }); ok {
		retention = r.Retention()
	}
	rows, err := ledger.Quarantine(ctx, db, now().Add(-cfg.OlderThan), min(10*limit, maxRows)+1)
	if err != nil {
		return res, err
	}
	if len(rows) > min(10*limit, maxRows) {
		res.Cut = true
	}
	for _, r := range rows {
		c := claimOf(r)
		t := now().UTC()
		if t.Sub(c.ClaimedAt) > retention {
			a := Answer{Unknown: fmt.Sprintf("claimed %v ago: %s keeps its record of a message for as little as %v", t.Sub(c.ClaimedAt).Round(time.Minute), p.Name(), retention)}
			res.Unknown++
			if note != nil {
				note(c, a)
			}
			continue
		}
		if res.Asked >= limit {
			res.Cut = true
			break
		}
		a, err := p.About(ctx, c, t)
		if err != nil {
			if errors.Is(err, ErrUnsupported) {
				return res, err
			}
			return res, fmt.Errorf("ask %s about %s: %w", p.Name(), c.Key[:12], err)
		}
		res.Asked++
		if note != nil {
			note(c, a)
		}
		if err := res.apply(ctx, db, cfg.By, t, c, a, changed); err != nil {
			return res, err
		}
	}
	return res, nil
}

// claimOf is what a provider is told of a ledger row.
func claimOf(r ledger.Row) Claim {
	c := Claim{Key: r.NoticeKey, Attempt: max(r.Attempts, 1), ClaimedAt: r.ClaimedAt, Digest: r.MessageSHA256}
	if r.MessageID != nil {
		c.MessageID = *r.MessageID
	}
	if r.ProviderID != nil {
		c.ProviderID = *r.ProviderID
	}
	return c
}

// apply settles one answer and counts it.
func (res *Result) apply(ctx context.Context, db *sqlx.DB, by string, now time.Time, c Claim, a Answer, changed func(ledger.Change) error) error {
	switch {
	case a.Pending:
		res.Pending++
	case a.Unknown != "":
		res.Unknown++
	case isNotFound(a):
		res.NotFound++
	default:
		res.Answered++
	}
	if len(a.Settlements) == 0 {
		return nil
	}
	var sr ledger.SettleResult
	err := ledger.WithTx(ctx, db, func(tx *sqlx.Tx) error {
		var err error
		sr, err = ledger.Settle(ctx, tx, by, now, a.Settlements)
		return err
	})
	if err != nil {
		return fmt.Errorf("settle %s: %w", c.Key[:12], err)
	}
	res.Settled += len(sr.Changed)
	res.Unchanged += sr.Unchanged
	res.Stale += sr.Stale
	for _, s := range a.Settlements {
		res.Events[s.Kind]++
	}
	if changed != nil {
		for _, ch := range sr.Changed {
			if err := changed(ch); err != nil {
				return err
			}
		}
	}
	return nil
}

// isNotFound reports whether a ends with notFound's "not sent".
func isNotFound(a Answer) bool {
	if len(a.Settlements) == 0 {
		return false
	}
	last := a.Settlements[len(a.Settlements)-1]
	return last.Kind == ledger.KindNotSent && strings.HasSuffix(last.Event, ":api/not_found")
}
