package scan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/subscription"
)

// Preview: what a notice would say, rendered without a claim or a send.
// Nothing here writes to the ledger or reaches a sender.

// Preview is one kind's notice for one subscription at the pass's now.
type Preview struct {
	Kind string
	// Message is the rendered notice; nil when the row is invalid for
	// this kind (Invalid says why).
	Message *notice.Message
	Invalid string
	// Due: its window is open now and the ledger has no row for it, so a
	// pass now would claim it (unless Deferred).
	Due bool
	// Deferred: the quiet hours would hold it for a later pass.
	Deferred bool
	// Ledger is the state of its ledger row, "" when it has none.
	Ledger ledger.State
	// Opens and Closes bound its window (zero when its anchor is NULL).
	Opens, Closes time.Time
	// SMS is the sms channel's text, for a kind whose channels include
	// sms (previewsms.go); nil otherwise.
	SMS *SMSPreview
}

// ErrNoSubscription: the source has no row with the id Preview was given.
var ErrNoSubscription = errors.New("no such subscription")

// Preview renders the notices subscription id would get at the pass's
// now: of each kind named, or, with none named, of each kind whose window
// is open now. It reads the source and the ledger and writes nothing.
func (p *Pass) Preview(ctx context.Context, id string, kinds []string) ([]Preview, error) {
	all := len(kinds) == 0
	if all {
		for _, k := range p.cfg.Policy.Notices {
			kinds = append(kinds, k.Kind)
		}
	}
	rows, err := ledger.BySubscription(ctx, p.db, id)
	if err != nil {
		return nil, err
	}
	var out []Preview
	for _, kind := range kinds {
		k, ok := p.kinds[kind]
		if !ok {
			return nil, &ConfigError{"kind", fmt.Sprintf("%q is not a kind of the policy", kind)}
		}
		pv, err := p.previewKind(ctx, p.db, id, k, rows)
		if err == nil {
			err = p.previewText(ctx, p.db, id, k, &pv)
		}
		if err != nil {
			return nil, err
		}
		if all && !pv.inWindow(p.cfg.Now) {
			continue // not this kind's time
		}
		out = append(out, pv)
	}
	return out, nil
}

func (p Preview) inWindow(now time.Time) bool {
	return !now.Before(p.Opens) && now.Before(p.Closes)
}

func (p *Pass) previewKind(ctx context.Context, db sqlx.QueryerContext, id string, k policy.Kind, ledgerRows []ledger.Row) (Preview, error) {
	pv := Preview{Kind: k.Kind}
	r, err := p.src.Get(ctx, db, k.AnchorColumn(), id)
	if err != nil {
		if errors.Is(err, subscription.ErrNotFound) {
			return pv, fmt.Errorf("%w: %q", ErrNoSubscription, id)
		}
		return pv, err
	}
	w := k.WindowFor(deref(r.Jurisdiction))
	if r.AnchorAt == nil {
		pv.Invalid = k.AnchorColumn() + " is NULL: not due for this kind"
		return pv, nil
	}
	pv.Opens, pv.Closes = w.Opens(*r.AnchorAt, p.content.zoneOf(r)), r.AnchorAt.Add(-time.Duration(w.CloseBefore))
	for _, l := range ledgerRows {
		if l.Kind == k.Kind && r.PeriodStart != nil && subscription.SameDay(l.PeriodStart, *r.PeriodStart) && l.Revision == r.Revision {
			pv.Ledger = l.State
		}
	}
	dn, reason := p.validate(p.content, r, k.Kind, w)
	if reason != "" {
		pv.Invalid = reason
		return pv, nil
	}
	p.derive(&dn)
	pv.Due = deref(r.Status) == "active" && pv.inWindow(p.cfg.Now) && pv.Ledger == ""
	pv.Deferred = pv.Due && p.content.defers(dn.n.TimeZone, dn.claim.WindowClosesAt)
	n := dn.notice()
	n.ClaimedAt = p.cfg.Now
	m, err := p.renderer.Render(n)
	if err != nil {
		return pv, err
	}
	pv.Message = m
	return pv, nil
}
