package scan

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/ledger"
)

// The scan's source queries: the only SQL outside internal/ledger. They
// read the subscriptions relation (a table or a view the operator names
// with --source) and anti-join the ledger on the business tuple, so that
// subscriptions already handled never leave the database.

// RequiredColumns are the columns the source relation must have.
var RequiredColumns = []string{"id", "email", "status", "renews_at", "period_start", "jurisdiction", "notice_revision"}

// OptionalColumns are read when present (they reach the message); each
// is read as text and checked by the pass (values.go), so that a bad value
// is a bad row, never a failed query.
var OptionalColumns = []string{"name", "plan", "amount", "currency", "billing_interval", "billing_interval_count", "locale", "time_zone"}

// QuoteSource quotes a relation name, optionally schema-qualified
// ("billing.subscriptions"), as SQL identifiers. Every character is allowed
// inside the quotes; a name with more than two parts or an empty part is
// refused.
func QuoteSource(name string) (string, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", fmt.Errorf("source %q: at most schema.relation", name)
	}
	for i, p := range parts {
		if p == "" || strings.ContainsRune(p, 0) {
			return "", fmt.Errorf("source %q: empty or invalid name", name)
		}
		parts[i] = pq.QuoteIdentifier(p)
	}
	return strings.Join(parts, "."), nil
}

// SourceColumnsProbe lists the columns of the source relation without
// reading a row.
const SourceColumnsProbe = `SELECT * FROM %s LIMIT 0`

// sourceRow is one subscription as the source queries return it.
type sourceRow struct {
	ID           string     `db:"id"`
	Email        *string    `db:"email"`
	RenewsAt     *time.Time `db:"renews_at"`
	PeriodStart  *time.Time `db:"period_start"`
	Jurisdiction *string    `db:"jurisdiction"`
	Revision     int        `db:"revision"`
	Name         *string    `db:"name"`
	Plan         *string    `db:"plan"`
	// AnchorAt is the kind's anchor column (renews_at unless the kind
	// names another): its window is measured from it.
	AnchorAt      *time.Time `db:"anchor_at"`
	Amount        *string    `db:"amount"`
	Currency      *string    `db:"currency"`
	Interval      *string    `db:"billing_interval"`
	IntervalCount *string    `db:"billing_interval_count"`
	Locale        *string    `db:"locale"`
	TimeZone      *string    `db:"time_zone"`
	LedgerKey     *string    `db:"notice_key"` // retry rows only
}

// selection is one window group of one kind: the default window (every
// jurisdiction without an override) or one jurisdiction's override.
type selection struct {
	kind string
	// anchor is the quoted column the window is measured from (the kind's
	// anchor: "renews_at" unless it names another).
	anchor      string
	open, close time.Duration
	// jurisdiction: "" for the default group, which excludes overrides.
	jurisdiction string
	overrides    []string
	// withNullTimes also returns active rows with NULL renews_at, so they
	// are counted invalid (once per pass: only the first group asks).
	withNullTimes bool
}

// between is the predicate "the anchor lies in (lo, hi]", lo and hi
// being placeholders.
func (sel selection) between(lo, hi string) string {
	return "s." + sel.anchor + " > " + lo + " AND s." + sel.anchor + " <= " + hi
}

// key names the group among a pass's selections.
func (sel selection) key() string { return sel.kind + "\x00" + sel.jurisdiction }

// source builds and runs the source queries for one relation.
type source struct {
	rel      string // quoted
	optional map[string]bool
	shard    int
	shards   int
}

// cols is the select list of the source queries, with the selection's
// anchor (a quoted column) as anchor_at.
func (s *source) cols(anchor string) string {
	var b strings.Builder
	b.WriteString(`s.id::text AS id, s.email::text AS email, s.renews_at, s.period_start::date AS period_start,
       s.jurisdiction::text AS jurisdiction, COALESCE(s.notice_revision, 0)::int AS revision, s.`)
	b.WriteString(anchor)
	b.WriteString(` AS anchor_at`)
	for _, c := range OptionalColumns {
		if s.optional[c] {
			fmt.Fprintf(&b, ", s.%s::text AS %s", c, c)
		} else {
			fmt.Fprintf(&b, ", NULL::text AS %s", c)
		}
	}
	return b.String()
}

// where returns the predicates every source query shares: active rows of
// this shard, and of this group's jurisdictions. Parameters are appended
// to args.
func (s *source) where(sel selection, args []any) (base, juris string, _ []any) {
	var b strings.Builder
	b.WriteString("s.status = 'active'")
	if s.shards > 1 {
		// A stable partition: the first 32 bits of md5(id), modulo N. The
		// same in every PostgreSQL version, unlike hashtext.
		args = append(args, s.shards, s.shard)
		fmt.Fprintf(&b, " AND mod(('x' || substr(md5(s.id::text), 1, 8))::bit(32)::bigint, $%d) = $%d", len(args)-1, len(args))
	}
	juris = "true"
	if sel.jurisdiction != "" {
		args = append(args, sel.jurisdiction)
		juris = fmt.Sprintf("s.jurisdiction = $%d", len(args))
	} else if len(sel.overrides) > 0 {
		args = append(args, pq.Array(sel.overrides))
		juris = fmt.Sprintf("(s.jurisdiction IS NULL OR s.jurisdiction <> ALL($%d::text[]))", len(args))
	}
	return b.String(), juris, args
}

// sameNotice matches a ledger row l with its subscription row s on the
// business tuple, as the ledger's unique index has it; each query adds the
// kind. Every source query that joins the ledger uses it.
const sameNotice = `l.subscription_id = s.id::text AND l.period_start = s.period_start::date AND l.revision = COALESCE(s.notice_revision, 0)`

// notHandled is the anti-join on the ledger's business tuple. ledgerAfter
// (from keyset) bounds the ledger's side by the page's cursor: it is
// implied by the join, but PostgreSQL does not infer it, and without it a
// merge anti-join re-reads every ledger row before the cursor on every
// page (quadratic in the pass's size).
func notHandled(ledgerAfter string) string {
	return `NOT EXISTS (
        SELECT 1 FROM notice_ledger l
        WHERE ` + sameNotice + ` AND l.kind = $1` + ledgerAfter + `)`
}

// fromPeriod appends the window's earliest billing period (periodFrom)
// to args and returns the bound it sets on the ledger's side of
// notHandled. It is implied by the join (every row of the window has a
// period at or after it), and, a constant, it prunes the ledger's past
// months when the page is planned: without it each page's anti-join walks
// every month's rows of the page's subscriptions, so the first pass grows
// with the ledger's history. A subscription whose period moves earlier
// while the pass runs may then be read as open; its claim meets the
// business-tuple index and is suppressed, as any concurrent claim is.
func fromPeriod(args []any, from *time.Time) (string, []any) {
	if from == nil {
		return "", args
	}
	args = append(args, from.Format(time.DateOnly))
	return fmt.Sprintf("\n          AND l.period_start >= $%d::date", len(args)), args
}

// keyset appends the page's cursor to args and returns the predicate that
// continues after it, and the same bound for the ledger's side of
// notHandled. Both compare text in the same collation, so the ledger bound
// is exactly implied by l.subscription_id = s.id::text.
func keyset(args []any, after *string) (cond, ledgerAfter string, _ []any) {
	if after == nil {
		return "", "", args
	}
	args = append(args, *after)
	return fmt.Sprintf("\n  AND s.id::text > $%d", len(args)),
		fmt.Sprintf("\n          AND l.subscription_id > $%d", len(args)), args
}

// SubscriptionListOpen: active subscriptions of one group whose window is
// open at now and that have no ledger row for this notice, in id order
// after a cursor. The window anchor-open <= now < anchor-close is passed
// as bounds on the kind's anchor (renews_at unless the kind names
// another): $2 = now+close (exclusive), $3 = now+open.
//
// The id keyset lets PostgreSQL walk the primary key and merge it with the
// ledger's business-tuple index, both bounded by the cursor: 0.75 ms a
// page of 1000 at 1M subscriptions. A (renews_at, id) keyset on the
// renews_at index was measured at 30-90 ms a page (a heap page per row,
// then a probe), 40x slower for a full window; for a sparse window the
// planner still picks the renews_at index and sorts. docs/BENCHMARKS.md.
//
// from, when known, is the window's earliest billing period (openFrom).
func (s *source) listOpen(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, from *time.Time, after *string, limit int) ([]sourceRow, error) {
	q, args := s.openQuery(sel, now, from, after)
	return s.page(ctx, db, q, args, limit)
}

// openQuery is SubscriptionListOpen without its order and limit.
func (s *source) openQuery(sel selection, now time.Time, from *time.Time, after *string) (string, []any) {
	args := []any{sel.kind, now.Add(sel.close), now.Add(sel.open)}
	base, juris, args := s.where(sel, args)
	window := juris + " AND " + sel.between("$2", "$3")
	if sel.withNullTimes {
		// Rows with no renews_at are in no window; the first group returns
		// them (whatever their jurisdiction) so they are counted invalid.
		// A NULL anchor other than renews_at is not due: not invalid.
		window = "((" + window + ") OR s.renews_at IS NULL)"
	}
	cursor, ledgerAfter, args := keyset(args, after)
	bound, args := fromPeriod(args, from)
	q := fmt.Sprintf(`SELECT %s
FROM %s s
WHERE %s
  AND %s
  AND %s%s`, s.cols(sel.anchor), s.rel, base, window, notHandled(ledgerAfter+bound), cursor)
	return q, args
}

// SubscriptionListClosed: active subscriptions of one group whose window
// has closed while the charge (for a kind anchored elsewhere, its anchor:
// the trial's end, the price change) is still ahead, with no ledger row:
// the notices to record as missed.
//
// from is the closed window's earliest billing period (closedFrom), the
// bound on the ledger's side (fromPeriod): the closed window holds the
// notices the last passes sent, each with its years of history.
func (s *source) listClosed(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, from *time.Time, after *string, limit int) ([]sourceRow, error) {
	q, args := s.closedQuery(sel, now, from, after)
	return s.page(ctx, db, q, args, limit)
}

// closedQuery is SubscriptionListClosed without its order and limit.
func (s *source) closedQuery(sel selection, now time.Time, from *time.Time, after *string) (string, []any) {
	args := []any{sel.kind, now, now.Add(sel.close)}
	base, juris, args := s.where(sel, args)
	cursor, ledgerAfter, args := keyset(args, after)
	bound, args := fromPeriod(args, from)
	q := fmt.Sprintf(`SELECT %s
FROM %s s
WHERE %s AND %s
  AND %s
  AND s.period_start IS NOT NULL
  AND %s%s`, s.cols(sel.anchor), s.rel, base, juris, sel.between("$2", "$3"), notHandled(ledgerAfter+bound), cursor)
	return q, args
}

// SubscriptionPeriodFrom: the earliest billing period of the active rows
// of one group whose anchor is in (lo, hi] (and of the rows with no
// renews_at, when withNull), nil when there are none. The pass reads it
// once per window, open (for countDue and listOpen) and closed (for
// listClosed), and passes it to their statements as a constant
// (fromPeriod), so that PostgreSQL prunes the ledger's past months when
// it plans them. As a sub-select inside countDue it pruned them only at
// run time, which PostgreSQL does not cost: over 10M past rows it chose a
// parallel hash join that took 3.9 s, against 0.2 s with the constant.
func (s *source) periodFrom(ctx context.Context, db sqlx.QueryerContext, sel selection, lo, hi time.Time, withNull bool) (*time.Time, error) {
	args := []any{lo, hi}
	base, juris, args := s.where(sel, args)
	window := juris + " AND " + sel.between("$1", "$2")
	if withNull {
		window = "((" + window + ") OR s.renews_at IS NULL)"
	}
	q := fmt.Sprintf(`SELECT min(s.period_start::date)
FROM %s s
WHERE %s AND %s`, s.rel, base, window)
	var from *time.Time
	if err := sqlx.GetContext(ctx, db, &from, q, args...); err != nil {
		return nil, fmt.Errorf("window's earliest period: %w", err)
	}
	return from, nil
}

// openFrom is periodFrom of the rows countDue and listOpen consider.
func (s *source) openFrom(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time) (*time.Time, error) {
	return s.periodFrom(ctx, db, sel, now.Add(sel.close), now.Add(sel.open), sel.withNullTimes)
}

// closedFrom is periodFrom of the rows listClosed considers.
func (s *source) closedFrom(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time) (*time.Time, error) {
	return s.periodFrom(ctx, db, sel, now, now.Add(sel.close), false)
}

// page orders by id and limits a source query whose cursor keyset added.
func (s *source) page(ctx context.Context, db sqlx.QueryerContext, q string, args []any, limit int) ([]sourceRow, error) {
	args = append(args, limit)
	q += fmt.Sprintf("\nORDER BY s.id::text\nLIMIT $%d", len(args))
	var rows []sourceRow
	if err := sqlx.SelectContext(ctx, db, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("select subscriptions: %w", err)
	}
	return rows, nil
}

// retryPage is one page of a kind's retry rows (ledger.Retries) with
// their subscriptions' current rows.
type retryPage struct {
	rows []sourceRow // the rows still this pass's to retry, each with its LedgerKey
	last string      // the page's last ledger key: the next page's cursor
	n    int         // ledger rows read: fewer than the limit ends the listing
}

// SubscriptionListRetry: the retry rows of one kind whose window has not
// closed (ledger.Retries), in key order after a cursor, each with its
// subscription's current row, looked up by id. A row whose subscription is no
// longer active, in this shard, or at the row's period and revision is
// left out: it is no longer this pass's to retry, and ExpireRetries marks
// it missed once its window closes.
func (s *source) listRetry(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, after string, limit int) (retryPage, error) {
	tks, err := ledger.Retries(ctx, db, sel.kind, now, after, limit)
	if err != nil || len(tks) == 0 {
		return retryPage{last: after}, err
	}
	ids := make([]string, 0, len(tks))
	for _, tk := range tks {
		ids = append(ids, tk.SubscriptionID)
	}
	args := []any{pq.Array(ids)}
	where, _, args := s.where(selection{}, args)
	q := fmt.Sprintf(`SELECT %s
FROM %s s
WHERE s.id::text = ANY($1::text[]) AND %s`, s.cols(sel.anchor), s.rel, where)
	var subs []sourceRow
	if err := sqlx.SelectContext(ctx, db, &subs, q, args...); err != nil {
		return retryPage{}, fmt.Errorf("select retries' subscriptions: %w", err)
	}
	byID := make(map[string]sourceRow, len(subs))
	for _, r := range subs {
		byID[r.ID] = r
	}
	pg := retryPage{last: tks[len(tks)-1].Key, n: len(tks)}
	for _, tk := range tks {
		r, ok := byID[tk.SubscriptionID]
		if !ok || r.PeriodStart == nil || !sameDay(*r.PeriodStart, tk.PeriodStart) || r.Revision != tk.Revision {
			continue
		}
		key := tk.Key
		r.LedgerKey = &key
		pg.rows = append(pg.rows, r)
	}
	return pg, nil
}

// sameDay compares two dates as the ledger's business tuple does.
func sameDay(a, b time.Time) bool {
	return a.Format(time.DateOnly) == b.Format(time.DateOnly)
}

// SubscriptionCountDue: in one walk of one group's window (the rows
// listOpen would consider), how many have no ledger row (open: what
// listOpen would return) and how many are due with a ledger row owned by
// another run (handled: what countHandled counts). A nightly re-run that
// finds open == 0 skips the group's stream: it then costs one indexed
// anti-join, not a walk plus a count. from is the window's earliest
// period (openFrom), the bound on the ledger's side (fromPeriod).
func (s *source) countDue(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, runID string, from *time.Time) (due dueCount, _ error) {
	args := []any{sel.kind, now.Add(sel.close), now.Add(sel.open), runID}
	base, juris, args := s.where(sel, args)
	inWindow := sel.between("$2", "$3")
	window := juris + " AND " + inWindow
	if sel.withNullTimes {
		window = "((" + window + ") OR s.renews_at IS NULL)"
	}
	bound, args := fromPeriod(args, from)
	q := fmt.Sprintf(`SELECT count(*) FILTER (WHERE l.subscription_id IS NULL) AS open,
       count(*) FILTER (WHERE l.subscription_id IS NOT NULL AND l.run_id <> $4 AND %s) AS handled
FROM %s s
LEFT JOIN notice_ledger l
       ON `+sameNotice+` AND l.kind = $1%s
WHERE %s
  AND %s`, inWindow, s.rel, bound, base, window)
	if err := sqlx.GetContext(ctx, db, &due, q, args...); err != nil {
		return due, fmt.Errorf("count due: %w", err)
	}
	return due, nil
}

// dueCount is what countDue finds in one window group.
type dueCount struct {
	Open    int `db:"open"`
	Handled int `db:"handled"`
}

// sampleProbes is how many due subscriptions sampleKeys looks up per key
// it wants.
const sampleProbes = 50

// SubscriptionSampleKeys: up to limit ledger rows (any kind) of active
// subscriptions whose renews_at lies in (lo, hi]: notices of the current
// windows, claimed by this pass's recent predecessors, whose keys the
// secret should still derive. Found through the renews_at range and the
// business-tuple index, so its cost does not grow with the ledger's
// history (ordering the whole ledger by claimed_at did). At most
// sampleProbes subscriptions are looked up, so its cost does not grow with
// the number due either (joining all of them hashed every due row for a
// sample of 20: 150 ms of a 0.9 s re-run at 200k). The earliest sampled
// period bounds the ledger's side, so that its past months are pruned.
func (s *source) sampleKeys(ctx context.Context, db sqlx.QueryerContext, lo, hi time.Time, limit int) ([]ledger.TupleKey, error) {
	q := fmt.Sprintf(`WITH s AS MATERIALIZED (
      SELECT s.id, s.period_start, s.notice_revision
      FROM %s s
      WHERE s.status = 'active' AND s.renews_at > $1 AND s.renews_at <= $2
      LIMIT $4)
SELECT l.notice_key, l.subscription_id, l.kind, l.period_start, l.revision
FROM s
JOIN notice_ledger l
  ON `+sameNotice+`
 AND l.period_start >= (SELECT min(s.period_start::date) FROM s)
LIMIT $3`, s.rel)
	var out []ledger.TupleKey
	if err := sqlx.SelectContext(ctx, db, &out, q, lo, hi, limit, sampleProbes*limit); err != nil {
		return nil, fmt.Errorf("sample keys: %w", err)
	}
	return out, nil
}

// SubscriptionCountHandled: due notices of one group that already have a
// ledger row owned by another run (claimed, sent, failed or retried
// elsewhere): the pass's "suppressed".
func (s *source) countHandled(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, runID string) (int, error) {
	args := []any{sel.kind, now.Add(sel.close), now.Add(sel.open), runID}
	base, juris, args := s.where(sel, args)
	q := fmt.Sprintf(`SELECT count(*)
FROM %s s
WHERE %s AND %s
  AND %s
  AND EXISTS (
        SELECT 1 FROM notice_ledger l
        WHERE `+sameNotice+` AND l.kind = $1
          AND l.run_id <> $4)`, s.rel, base, juris, sel.between("$2", "$3"))
	var n int
	if err := sqlx.GetContext(ctx, db, &n, q, args...); err != nil {
		return 0, fmt.Errorf("count handled: %w", err)
	}
	return n, nil
}
