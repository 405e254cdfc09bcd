package subscription

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/ledger"
)

// The reads a pass makes, one method a statement. Each bound pair (lo,
// hi] is on the group's anchor; the pass derives it from its now and the
// group's window. from, where a read takes it, is the window's earliest
// billing period (PeriodFrom; nil when unknown), which bounds the
// ledger's side of the join so that its past months are pruned. after is
// the page's cursor, an id (nil from the start).

// group returns the group parameters $1-$7 for g with the anchor in
// (lo, hi], followed by more.
func (s *Source) group(g Group, lo, hi time.Time, withNull bool, more ...any) []any {
	var juris, overrides any // NULL: not this predicate
	if g.Jurisdiction != "" {
		juris = g.Jurisdiction
	}
	if len(g.Overrides) > 0 {
		overrides = pq.Array(g.Overrides)
	}
	return append([]any{s.shard.N, s.shard.I, lo, hi, juris, overrides, withNull}, more...)
}

// textParam is a cursor as a parameter: NULL for nil (from the start).
func textParam(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// dateParam is a period as a date parameter: NULL for nil (unknown).
func dateParam(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Format(time.DateOnly)
}

// ListOpen returns a page of at most limit active rows of g, in id order
// after the cursor, whose anchor is in (lo, hi] (lo = now+close, hi =
// now+open: the window is open at now) and which have no ledger row for
// g's kind (subscriptionListOpen); with g.WithNullTimes, also those with
// no renews_at.
func (s *Source) ListOpen(ctx context.Context, db sqlx.QueryerContext, g Group, lo, hi time.Time, from *time.Time, after *string, limit int) ([]Row, error) {
	q, args, err := s.openQuery(g, lo, hi, from, after, limit)
	if err != nil {
		return nil, err
	}
	return page(ctx, db, q, args)
}

// openQuery is subscriptionListOpen with its parameters.
func (s *Source) openQuery(g Group, lo, hi time.Time, from *time.Time, after *string, limit int) (string, []any, error) {
	st, err := s.statements(g.Anchor)
	if err != nil {
		return "", nil, err
	}
	return st.listOpen, s.group(g, lo, hi, g.WithNullTimes, g.Kind, textParam(after), dateParam(from), limit), nil
}

// ListClosed returns a page of the active rows of g whose window has
// closed (lo = now, hi = now+close) while the anchor is still ahead, with
// no ledger row: the notices to record as missed (subscriptionListClosed).
func (s *Source) ListClosed(ctx context.Context, db sqlx.QueryerContext, g Group, lo, hi time.Time, from *time.Time, after *string, limit int) ([]Row, error) {
	q, args, err := s.closedQuery(g, lo, hi, from, after, limit)
	if err != nil {
		return nil, err
	}
	return page(ctx, db, q, args)
}

// closedQuery is subscriptionListClosed with its parameters.
func (s *Source) closedQuery(g Group, lo, hi time.Time, from *time.Time, after *string, limit int) (string, []any, error) {
	st, err := s.statements(g.Anchor)
	if err != nil {
		return "", nil, err
	}
	return st.listClosed, s.group(g, lo, hi, false, g.Kind, textParam(after), dateParam(from), limit), nil
}

// PeriodFrom returns the earliest billing period of the rows of g whose
// anchor is in (lo, hi] (and of the rows with no renews_at, with
// g.WithNullTimes), nil when there are none (subscriptionPeriodFrom).
func (s *Source) PeriodFrom(ctx context.Context, db sqlx.QueryerContext, g Group, lo, hi time.Time) (*time.Time, error) {
	st, err := s.statements(g.Anchor)
	if err != nil {
		return nil, err
	}
	var from *time.Time
	if err := sqlx.GetContext(ctx, db, &from, st.periodFrom, s.group(g, lo, hi, g.WithNullTimes)...); err != nil {
		return nil, fmt.Errorf("window's earliest period: %w", err)
	}
	return from, nil
}

// DueCount is what CountDue finds in one window group.
type DueCount struct {
	// Open: the rows with no ledger row (what ListOpen returns).
	Open int `db:"open"`
	// Handled: the rows due with a ledger row owned by another run
	// (what CountHandled counts).
	Handled int `db:"handled"`
	// Waiting: the rows due with a ledger row waiting as invalid_address
	// (any run's), which Handled leaves out.
	Waiting int `db:"waiting"`
}

// CountDue counts, in one walk of the rows ListOpen considers, those
// with no ledger row and those due with a ledger row of another run than
// runID (subscriptionCountDue).
func (s *Source) CountDue(ctx context.Context, db sqlx.QueryerContext, g Group, lo, hi time.Time, runID string, from *time.Time) (due DueCount, _ error) {
	st, err := s.statements(g.Anchor)
	if err != nil {
		return due, err
	}
	args := s.group(g, lo, hi, g.WithNullTimes, g.Kind, runID, dateParam(from))
	if err := sqlx.GetContext(ctx, db, &due, st.countDue, args...); err != nil {
		return due, fmt.Errorf("count due: %w", err)
	}
	return due, nil
}

// CountOpen counts the rows ListOpen returns over all its pages, without
// the rows with no renews_at (subscriptionCountOpen). Like CountHandled, it
// first reads the rows' earliest billing period, so that the ledger's past
// months are pruned when the count is planned.
func (s *Source) CountOpen(ctx context.Context, db sqlx.QueryerContext, g Group, lo, hi time.Time) (int, error) {
	st, err := s.statements(g.Anchor)
	if err != nil {
		return 0, err
	}
	var from *time.Time
	if err := sqlx.GetContext(ctx, db, &from, st.periodFrom, s.group(g, lo, hi, false)...); err != nil {
		return 0, fmt.Errorf("count open notices: earliest period: %w", err)
	}
	var n int
	if err := sqlx.GetContext(ctx, db, &n, st.countOpen, s.group(g, lo, hi, false, g.Kind, nil, dateParam(from))...); err != nil {
		return 0, fmt.Errorf("count open notices: %w", err)
	}
	return n, nil
}

// CountHandled counts the due rows of g that already have a ledger row
// owned by another run than runID: the pass's "suppressed"
// (subscriptionCountHandled). It first reads the rows' earliest billing
// period (subscriptionPeriodFrom), so that the count is planned with the
// ledger's past months pruned.
func (s *Source) CountHandled(ctx context.Context, db sqlx.QueryerContext, g Group, lo, hi time.Time, runID string) (int, error) {
	st, err := s.statements(g.Anchor)
	if err != nil {
		return 0, err
	}
	var from *time.Time
	if err := sqlx.GetContext(ctx, db, &from, st.periodFrom, s.group(g, lo, hi, false)...); err != nil {
		return 0, fmt.Errorf("count handled: earliest period: %w", err)
	}
	return s.CountHandledFrom(ctx, db, g, lo, hi, runID, from)
}

// CountHandledFrom is CountHandled with the rows' earliest billing period
// from already read (PeriodFrom's, as the pass read it for the window's
// stream): one walk of the window, not two.
func (s *Source) CountHandledFrom(ctx context.Context, db sqlx.QueryerContext, g Group, lo, hi time.Time, runID string, from *time.Time) (int, error) {
	st, err := s.statements(g.Anchor)
	if err != nil {
		return 0, err
	}
	var n int
	if err := sqlx.GetContext(ctx, db, &n, st.countHandled, s.group(g, lo, hi, false, g.Kind, runID, dateParam(from))...); err != nil {
		return 0, fmt.Errorf("count handled: %w", err)
	}
	return n, nil
}

// ListByID returns the current rows of ids that are in this shard,
// whatever their status, each with its Status and anchor's AnchorAt, in
// no order (subscriptionListRetry): the subscriptions of the ledger's
// retry rows.
func (s *Source) ListByID(ctx context.Context, db sqlx.QueryerContext, anchor string, ids []string) ([]Row, error) {
	st, err := s.statements(anchor)
	if err != nil {
		return nil, err
	}
	rows, err := queryRows(ctx, db, st.listByID, s.shard.N, s.shard.I, pq.Array(ids))
	if err != nil {
		return nil, fmt.Errorf("select retries' subscriptions: %w", err)
	}
	return rows, nil
}

// Get returns the row of id, whatever its status or shard, with its
// Status and anchor's AnchorAt (subscriptionGet); ErrNotFound when the
// relation has none.
func (s *Source) Get(ctx context.Context, db sqlx.QueryerContext, anchor, id string) (Row, error) {
	st, err := s.statements(anchor)
	if err != nil {
		return Row{}, err
	}
	rows, err := queryRows(ctx, db, st.get, id)
	if err != nil {
		return Row{}, fmt.Errorf("read subscription: %w", err)
	}
	if len(rows) == 0 {
		return Row{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return rows[0], nil
}

// sampleProbes is how many due subscriptions SampleKeys looks up per key
// it wants.
const sampleProbes = 50

// SampleKeys returns up to limit ledger rows (any kind) of active
// subscriptions whose renews_at is in (lo, hi]: the keys of the current
// windows' notices, for the pass's check that the secret still derives
// them (subscriptionSampleKeys).
func (s *Source) SampleKeys(ctx context.Context, db sqlx.QueryerContext, lo, hi time.Time, limit int) ([]ledger.TupleKey, error) {
	var out []ledger.TupleKey
	if err := sqlx.SelectContext(ctx, db, &out, s.sampleStmt, lo, hi, limit, sampleProbes*limit); err != nil {
		return nil, fmt.Errorf("sample keys: %w", err)
	}
	return out, nil
}

// page runs a statement that lists subscriptions.
func page(ctx context.Context, db sqlx.QueryerContext, q string, args []any) ([]Row, error) {
	rows, err := queryRows(ctx, db, q, args...)
	if err != nil {
		return nil, fmt.Errorf("select subscriptions: %w", err)
	}
	return rows, nil
}

// ListFallback returns a page of the sms channel's rows of g (the kind's
// email notice absent or carried on at now, as ledger.CarriesOn says with
// g.ConfirmWithin; its sms notice absent or in retry):
// active rows whose window is open (lo, hi as ListOpen's), each with its
// email row's state in EmailState and its sms row's key, if any, in
// LedgerKey, restricted to the subscriptions ids unless nil
// (subscriptionListFallback). g.WithNullTimes is ignored.
func (s *Source) ListFallback(ctx context.Context, db sqlx.QueryerContext, g Group, now, lo, hi time.Time, after *string, limit int, ids []string) ([]Row, error) {
	st, err := s.statements(g.Anchor)
	if err != nil {
		return nil, err
	}
	var only any // NULL: every row
	if ids != nil {
		only = pq.Array(ids)
	}
	var confirm any // NULL: no confirm_within
	if g.ConfirmWithin > 0 {
		confirm = fmt.Sprintf("%d microseconds", g.ConfirmWithin.Microseconds())
	}
	return page(ctx, db, st.listFallback, s.group(g, lo, hi, false, g.Kind, textParam(after), nil, limit, only, now.UTC(), confirm))
}

// ListClosedSMS returns a page of the active rows of g, a kind that goes
// by sms first, whose window has closed (lo = now, hi = now+close) with
// no sms row: the sms notices to record as missed
// (subscriptionListClosedSMS). g.WithNullTimes is ignored.
func (s *Source) ListClosedSMS(ctx context.Context, db sqlx.QueryerContext, g Group, lo, hi time.Time, after *string, limit int) ([]Row, error) {
	st, err := s.statements(g.Anchor)
	if err != nil {
		return nil, err
	}
	return page(ctx, db, st.listClosedSMS, s.group(g, lo, hi, false, g.Kind, textParam(after), nil, limit))
}
