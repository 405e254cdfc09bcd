package subscription

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/policy"
)

// Window is one window group of one kind as a pass selects it: the
// default window (every jurisdiction without an override) or one
// jurisdiction's override, with the window itself. At reads it at a
// pass's now: each read takes the window's bounds at that instant.
type Window struct {
	Group
	// Open and Close: the window opens Open and closes Close before the
	// anchor.
	Open, Close time.Duration
	// Due, when set, opens the window instead of Open (issue 27): the
	// statements then read a superset of the open rows (Hi) and the pass
	// keeps those due in each row's zone (DueBounds.Open).
	Due *DueBounds
	// Rule is the window's rule text, kept with each notice in the ledger.
	Rule string
}

// Hi is the upper bound of the anchors the statements read as open at
// now: now+Open, or a due rule's bound over every zone.
func (w Window) Hi(now time.Time) time.Time {
	if w.Due != nil {
		return w.Due.superset
	}
	return now.Add(w.Open)
}

// Key names the window group among a pass's.
func (w Window) Key() string { return w.Kind + "\x00" + w.Jurisdiction }

// closed is w's group without the rows with no renews_at: the closed
// window's reads never count them.
func (w Window) closed() Group {
	g := w.Group
	g.WithNullTimes = false
	return g
}

// Policy is w's window as the policy writes it.
func (w Window) Policy() policy.Window {
	pw := policy.Window{OpenBefore: policy.Duration(w.Open), CloseBefore: policy.Duration(w.Close)}
	if w.Due != nil {
		pw.Due = w.Due.Rule
	}
	return pw
}

// DueBounds is a due rule evaluated at a pass's now: per time zone, the
// exclusive bound of the anchors that are due (policy.Due.Bound), found
// once per zone. Not safe for concurrent use: give each goroutine its own.
type DueBounds struct {
	Rule     *policy.Due
	now      time.Time
	superset time.Time
	byZone   map[*time.Location]time.Time
}

// NewDueBounds evaluates d at now.
func NewDueBounds(d *policy.Due, now time.Time) *DueBounds {
	return &DueBounds{Rule: d, now: now, superset: d.SupersetBound(now), byZone: map[*time.Location]time.Time{}}
}

// Open reports whether the notice of a row anchored at anchor, for a
// recipient in loc, is due at the pass's now.
func (b *DueBounds) Open(anchor time.Time, loc *time.Location) bool {
	bound, ok := b.byZone[loc]
	if !ok {
		bound = b.Rule.Bound(b.now, loc)
		if len(b.byZone) < MaxZones {
			b.byZone[loc] = bound
		}
	}
	return anchor.Before(bound)
}

// Copy is b's rule at the same now, with a cache of its own.
func (b *DueBounds) Copy() *DueBounds {
	if b == nil {
		return nil
	}
	return NewDueBounds(b.Rule, b.now)
}

// At reads a Source's windows at a pass's instant Now, Limit rows a page.
// Safe for concurrent use.
type At struct {
	*Source
	Now   time.Time
	Limit int
}

// OpenPage reads a page of w's open rows. from, when known, is the
// window's earliest billing period (OpenFrom).
func (a At) OpenPage(ctx context.Context, db sqlx.QueryerContext, w Window, from *time.Time, after *string) ([]Row, error) {
	return a.ListOpen(ctx, db, w.Group, a.Now.Add(w.Close), w.Hi(a.Now), from, after, a.Limit)
}

// ClosedPage reads a page of w's rows whose window has closed with no
// ledger row. from is the closed window's earliest billing period
// (ClosedFrom).
func (a At) ClosedPage(ctx context.Context, db sqlx.QueryerContext, w Window, from *time.Time, after *string) ([]Row, error) {
	return a.ListClosed(ctx, db, w.closed(), a.Now, a.Now.Add(w.Close), from, after, a.Limit)
}

// OpenFrom is the earliest billing period of the rows Due and OpenPage
// consider.
func (a At) OpenFrom(ctx context.Context, db sqlx.QueryerContext, w Window) (*time.Time, error) {
	return a.PeriodFrom(ctx, db, w.Group, a.Now.Add(w.Close), w.Hi(a.Now))
}

// ClosedFrom is the earliest billing period of the rows ClosedPage
// considers.
func (a At) ClosedFrom(ctx context.Context, db sqlx.QueryerContext, w Window) (*time.Time, error) {
	return a.PeriodFrom(ctx, db, w.closed(), a.Now, a.Now.Add(w.Close))
}

// Due counts w's open rows and those due that another run than runID
// handled. from is the window's earliest period (OpenFrom).
func (a At) Due(ctx context.Context, db sqlx.QueryerContext, w Window, runID string, from *time.Time) (DueCount, error) {
	return a.CountDue(ctx, db, w.Group, a.Now.Add(w.Close), w.Hi(a.Now), runID, from)
}

// Handled counts w's due rows that another run than runID handled.
func (a At) Handled(ctx context.Context, db sqlx.QueryerContext, w Window, runID string) (int, error) {
	return a.CountHandled(ctx, db, w.Group, a.Now.Add(w.Close), w.Hi(a.Now), runID)
}

// HandledFrom is Handled with w's earliest period from (OpenFrom) read
// already.
func (a At) HandledFrom(ctx context.Context, db sqlx.QueryerContext, w Window, runID string, from *time.Time) (int, error) {
	return a.CountHandledFrom(ctx, db, w.Group, a.Now.Add(w.Close), w.Hi(a.Now), runID, from)
}

// Opened counts w's open rows over all OpenPage's pages.
func (a At) Opened(ctx context.Context, db sqlx.QueryerContext, w Window) (int, error) {
	return a.CountOpen(ctx, db, w.Group, a.Now.Add(w.Close), w.Hi(a.Now))
}

// FallbackPage reads a page of the sms channel's rows of w (their email
// notice absent or carried on: ledger.CarriedOnSQL, with the kind's
// confirm_within), restricted to the subscriptions ids unless nil.
func (a At) FallbackPage(ctx context.Context, db sqlx.QueryerContext, w Window, after *string, ids []string) ([]Row, error) {
	return a.ListFallback(ctx, db, w.Group, a.Now, a.Now.Add(w.Close), w.Hi(a.Now), after, a.Limit, ids)
}

// ClosedSMSPage reads a page of the rows of w, a kind that goes by sms
// first, whose window has closed with no sms row.
func (a At) ClosedSMSPage(ctx context.Context, db sqlx.QueryerContext, w Window, after *string) ([]Row, error) {
	return a.ListClosedSMS(ctx, db, w.closed(), a.Now, a.Now.Add(w.Close), after, a.Limit)
}

// AfterSMSPage reads a page of w's open rows whose sms notice failed and
// that have no email notice.
func (a At) AfterSMSPage(ctx context.Context, db sqlx.QueryerContext, w Window, from *time.Time, after *string) ([]Row, error) {
	return a.ListAfterSMS(ctx, db, w.Group, a.Now.Add(w.Close), w.Hi(a.Now), from, after, a.Limit)
}

// Retried counts the retry rows of w's kind ListRetry returns over all
// its pages. Retry rows are few (failures whose window is still open),
// so it reads them as the pass does, rather than state the same filter
// twice.
func (a At) Retried(ctx context.Context, db sqlx.QueryerContext, w Window) (int, error) {
	n := 0
	err := EachPage(func(after string) (string, bool, error) {
		rp, err := a.ListRetry(ctx, db, w.Kind, w.Anchor, a.Now, after, a.Limit)
		n += len(rp.Rows)
		return rp.Last, rp.N < a.Limit, err
	})
	return n, err
}

// Windows is kind k's window group at now: its default window, then each
// jurisdiction's override. withNullTimes: the default window's reads
// count the rows with no renews_at (one group of the pass does).
func Windows(k policy.Kind, now time.Time, withNullTimes bool) []Window {
	anchor, def := k.AnchorColumn(), k.Default()
	g := Group{Kind: k.Kind, Anchor: anchor, ConfirmWithin: time.Duration(k.ConfirmWithin)}
	dg := g
	dg.Overrides, dg.WithNullTimes = k.Overrides(), withNullTimes
	group := []Window{{Group: dg, Open: time.Duration(def.OpenBefore), Close: time.Duration(def.CloseBefore), Rule: def.Rule(anchor)}}
	if def.Due != nil {
		group[0].Due = NewDueBounds(def.Due, now)
	}
	for _, j := range k.Overrides() {
		w := k.ByJurisdiction[j]
		jg := g
		jg.Jurisdiction = j
		group = append(group, Window{Group: jg, Open: time.Duration(w.OpenBefore), Close: time.Duration(w.CloseBefore), Rule: w.Rule(anchor)})
	}
	return group
}

// ClosedLister is the statement that reads w's closed-window rows, a page
// after after at a time: those with no row of the sms channel (sms), else
// with no email row (from the window's earliest period, read first).
func (a At) ClosedLister(ctx context.Context, db sqlx.QueryerContext, w Window, sms bool) (func(after *string) ([]Row, error), error) {
	if sms {
		return func(after *string) ([]Row, error) { return a.ClosedSMSPage(ctx, db, w, after) }, nil
	}
	from, err := a.ClosedFrom(ctx, db, w)
	if err != nil {
		return nil, err
	}
	return func(after *string) ([]Row, error) { return a.ClosedPage(ctx, db, w, from, after) }, nil
}

// Pending counts the open, unclaimed notices of every window of groups
// (each a kind's windows: Windows) and each kind's retry rows: one
// count(*) each with the predicates of the pass's own reads.
func (a At) Pending(ctx context.Context, db sqlx.QueryerContext, groups [][]Window) (int, error) {
	total := 0
	for _, group := range groups {
		for _, w := range group {
			n, err := a.Opened(ctx, db, w)
			if err != nil {
				return 0, err
			}
			total += n
		}
		n, err := a.Retried(ctx, db, group[0])
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// Furthest is the latest upper bound (Hi) of the windows of groups at
// now, and now when none lies ahead: the furthest window's opening.
func Furthest(groups [][]Window, now time.Time) time.Time {
	hi := now
	for _, group := range groups {
		for _, w := range group {
			if o := w.Hi(now); o.After(hi) {
				hi = o
			}
		}
	}
	return hi
}
