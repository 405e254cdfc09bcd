package scan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/subscription"
)

// ErrNoSubscription: the source has no row with the id Draft was given.
var ErrNoSubscription = errors.New("no such subscription")

// Draft is one subscription's notice of one kind as a pass at its now
// would make it, for a person to read before anything is sent
// (internal/preview renders it): the pass's classifier, keys and quiet
// hours, with nothing claimed, sent or written.
type Draft struct {
	Row subscription.Row
	// Ledger is the state of the notice's ledger row, "" when it has none.
	Ledger ledger.State
	// Opens and Closes bound its window (zero when its anchor is NULL).
	Opens, Closes time.Time
	// Email is the email notice, keyed as a pass keys it; Invalid says
	// why a pass would not mail it ("" when it would); Quiet: the quiet
	// hours would hold it.
	Email   notice.Notice
	Invalid string
	Quiet   bool
	// Text is the sms notice, for a kind whose channels include sms and a
	// row that makes a notice tuple (nil otherwise); TextInvalid and
	// TextQuiet are Invalid's and Quiet's for it.
	Text        *notice.Notice
	TextInvalid string
	TextQuiet   bool
}

// Draft returns subscription id's notice of kind at the pass's now. It
// reads the source and the ledger and writes nothing.
func (p *Pass) Draft(ctx context.Context, id, kind string) (Draft, error) {
	k, ok := p.kinds[kind]
	if !ok {
		return Draft{}, &ConfigError{Field: "kind", Msg: fmt.Sprintf("%q is not a kind of the policy", kind)}
	}
	r, err := p.src.Get(ctx, p.db, k.AnchorColumn(), id)
	if errors.Is(err, subscription.ErrNotFound) {
		return Draft{}, fmt.Errorf("%w: %q", ErrNoSubscription, id)
	}
	if err != nil {
		return Draft{}, err
	}
	d := Draft{Row: r}
	if r.AnchorAt == nil {
		d.Invalid = k.AnchorColumn() + " is NULL: not due for this kind"
		return d, nil
	}
	rows, err := ledger.BySubscription(ctx, p.db, id)
	if err != nil {
		return d, err
	}
	for _, l := range rows {
		if l.Kind == kind && r.PeriodStart != nil && subscription.SameDay(l.PeriodStart, *r.PeriodStart) && l.Revision == r.Revision {
			d.Ledger = l.State
		}
	}
	j := deref(r.Jurisdiction)
	w := k.WindowFor(j)
	d.Opens, d.Closes = w.Opens(*r.AnchorAt, p.content.ZoneOf(r)), r.AnchorAt.Add(-time.Duration(w.CloseBefore))
	dn, reason := p.validate(p.content, r, kind, w)
	if d.Invalid = reason; reason == "" {
		p.derive(&dn)
		d.Email, d.Quiet = dn.notice(), p.content.Defers(dn.n.TimeZone, dn.claim.WindowClosesAt)
		d.Email.ClaimedAt = p.cfg.Now
	}
	if !k.HasSMS() {
		return d, nil
	}
	v := p.classify(p.content, r, ask{sel: selection{Group: subscription.Group{Kind: kind, Jurisdiction: j}, Rule: w.Rule(k.AnchorColumn())}, channel: notice.ChannelSMS})
	if !v.keyed {
		return d, nil
	}
	t := v.dn.claim.Tuple
	n := v.dn.n
	n.Tuple, n.Key, n.CancelToken, n.ClaimedAt = t, p.keyer.ChannelKey(t, notice.ChannelSMS), p.keyer.CancelToken(t), p.cfg.Now
	d.Text, d.TextQuiet = &n, v.is == deferred
	switch v.is {
	case unreachable:
		d.TextInvalid = ledger.ReasonNoAddress
	case invalid:
		d.TextInvalid = v.reason
	}
	return d, nil
}
