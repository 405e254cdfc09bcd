package scan

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/policy"
	"scan/internal/subscription"
)

// The pass's view of its source relation: package subscription reads it;
// here a window group's window at the pass's now becomes the bounds its
// reads take. No SQL statement lives in this package.

// selection is one window group of one kind: the default window (every
// jurisdiction without an override) or one jurisdiction's override.
type selection struct {
	kind string
	// anchor is the column the window is measured from (the kind's
	// anchor: "renews_at" unless it names another).
	anchor      string
	open, close time.Duration
	// jurisdiction: "" for the default group, which excludes overrides.
	jurisdiction string
	overrides    []string
	// withNullTimes also returns active rows with NULL renews_at, so they
	// are counted invalid (once per pass: only the first group asks).
	withNullTimes bool
	// due, when set, opens the window instead of open (issue 27): the
	// statements then read a superset of the open rows (hi) and the pass
	// keeps those due in each row's zone (dueAt).
	due *dueBounds
	// rule is the window's rule text, kept with each notice in the ledger.
	rule string
	// confirm is the kind's confirm_within (0: none): how long an email
	// accepted may stay unconfirmed before the next channel takes it.
	confirm time.Duration
}

// hi is the upper bound of the anchors the statements read as open at
// now: now+open, or a due rule's bound over every zone.
func (sel selection) hi(now time.Time) time.Time {
	if sel.due != nil {
		return sel.due.superset
	}
	return now.Add(sel.open)
}

// dueBounds is a due rule evaluated at a pass's now: per time zone, the
// exclusive bound of the anchors that are due (policy.Due.Bound), found
// once per zone. Not safe for concurrent use: the producer alone calls it.
type dueBounds struct {
	rule     *policy.Due
	now      time.Time
	superset time.Time
	byZone   map[*time.Location]time.Time
}

func newDueBounds(d *policy.Due, now time.Time) *dueBounds {
	return &dueBounds{rule: d, now: now, superset: d.SupersetBound(now), byZone: map[*time.Location]time.Time{}}
}

// open reports whether the notice of a row anchored at anchor, for a
// recipient in loc, is due at the pass's now.
func (b *dueBounds) open(anchor time.Time, loc *time.Location) bool {
	bound, ok := b.byZone[loc]
	if !ok {
		bound = b.rule.Bound(b.now, loc)
		if len(b.byZone) < subscription.MaxZones {
			b.byZone[loc] = bound
		}
	}
	return anchor.Before(bound)
}

// key names the group among a pass's selections.
func (sel selection) key() string { return sel.kind + "\x00" + sel.jurisdiction }

// group is sel as the source's reads select it.
func (sel selection) group() subscription.Group {
	return subscription.Group{Kind: sel.kind, Anchor: sel.anchor, Jurisdiction: sel.jurisdiction, Overrides: sel.overrides, WithNullTimes: sel.withNullTimes,
		ConfirmWithin: sel.confirm}
}

// closedGroup is sel without the rows with no renews_at: the closed
// window's reads never count them.
func (sel selection) closedGroup() subscription.Group {
	g := sel.group()
	g.WithNullTimes = false
	return g
}

// source is the pass's source relation (subscription.Open), read by the
// windows of its selections at a pass's now. Safe for concurrent use.
type source struct{ *subscription.Source }

// listOpen reads a page of sel's open rows at now. from, when known, is
// the window's earliest billing period (openFrom).
func (s source) listOpen(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, from *time.Time, after *string, limit int) ([]subscription.Row, error) {
	return s.ListOpen(ctx, db, sel.group(), now.Add(sel.close), sel.hi(now), from, after, limit)
}

// listClosed reads a page of sel's rows whose window has closed at now
// with no ledger row. from is the closed window's earliest billing
// period (closedFrom).
func (s source) listClosed(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, from *time.Time, after *string, limit int) ([]subscription.Row, error) {
	return s.ListClosed(ctx, db, sel.closedGroup(), now, now.Add(sel.close), from, after, limit)
}

// openFrom is the earliest billing period of the rows countDue and
// listOpen consider.
func (s source) openFrom(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time) (*time.Time, error) {
	return s.PeriodFrom(ctx, db, sel.group(), now.Add(sel.close), sel.hi(now))
}

// closedFrom is the earliest billing period of the rows listClosed
// considers.
func (s source) closedFrom(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time) (*time.Time, error) {
	return s.PeriodFrom(ctx, db, sel.closedGroup(), now, now.Add(sel.close))
}

// countDue counts sel's open rows and those due that another run
// handled, at now. from is the window's earliest period (openFrom).
func (s source) countDue(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, runID string, from *time.Time) (subscription.DueCount, error) {
	return s.CountDue(ctx, db, sel.group(), now.Add(sel.close), sel.hi(now), runID, from)
}

// countHandled counts sel's due rows that another run than runID
// handled, at now.
func (s source) countHandled(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, runID string) (int, error) {
	return s.CountHandled(ctx, db, sel.group(), now.Add(sel.close), sel.hi(now), runID)
}

// countOpen counts sel's open rows at now over all listOpen's pages.
func (s source) countOpen(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time) (int, error) {
	return s.CountOpen(ctx, db, sel.group(), now.Add(sel.close), sel.hi(now))
}

// listFallback reads a page of the sms channel's rows of sel at now
// (their email notice absent or carried on: ledger.CarriedOnSQL, with the
// kind's confirm_within), restricted to the subscriptions ids unless nil.
func (s source) listFallback(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, after *string, limit int, ids []string) ([]subscription.Row, error) {
	return s.ListFallback(ctx, db, sel.group(), now, now.Add(sel.close), sel.hi(now), after, limit, ids)
}

// listClosedSwept reads a page of the rows of sel, a kind that goes by sms
// first, whose window has closed at now with no sms row.
func (s source) listClosedSwept(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, after *string, limit int) ([]subscription.Row, error) {
	return s.ListClosedSMS(ctx, db, sel.closedGroup(), now, now.Add(sel.close), after, limit)
}
