package scan

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/ledger"
	"scan/internal/policy"
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
var OptionalColumns = []string{"name", "plan", "amount", "currency", "billing_interval", "billing_interval_count", "locale", "time_zone", "phone"}

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
	Status        *string    `db:"-"`          // retry rows only (subscriptionListRetry)
	Phone         *string    `db:"phone"`      // the sms channel's number (issue 30)
	// EmailState is the state of the notice's email row, read by the
	// sms channel's statement only ("" for none).
	EmailState *string `db:"email_state"`
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
	// due, when set, opens the window instead of open (issue 27): the
	// statements then read a superset of the open rows (hi) and the pass
	// keeps those due in each row's zone (dueAt).
	due *dueBounds
	// rule is the window's rule text, kept with each notice in the ledger.
	rule string
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
		if len(b.byZone) < maxZones {
			b.byZone[loc] = bound
		}
	}
	return anchor.Before(bound)
}

// key names the group among a pass's selections.
func (sel selection) key() string { return sel.kind + "\x00" + sel.jurisdiction }

// The source's statements, by name, noun first. Each is a template whose
// slots ({rel}, {cols}, {anchor}) take identifiers only, known at
// start-up: the quoted relation, the select list of the columns it has
// (selectList), and a kind's quoted anchor column. newSource fills them
// once; every value is a parameter numbered in the template.
//
// The statements on one window group share the group parameters $1-$7,
// which inGroup reads:
//
//	$1 shards (int), $2 this shard (int): the shard's rows;
//	$3 lo, $4 hi (timestamptz): the anchor lies in (lo, hi];
//	$5 the group's jurisdiction, NULL for the default group;
//	$6 the overrides (text[]) the default group leaves out, NULL for none;
//	$7 (bool) also the rows with no renews_at (withNullTimes).
//
// A NULL (or false) parameter switches its predicate off. lib/pq sends
// each statement unnamed, so PostgreSQL plans it with its parameters'
// values: the switched-off predicates fold away and the plan is the one
// of the predicates that apply (the ledger's partitions, too, are pruned
// when the plan is made; source_internal_test.go).

// inShard: the active rows of this shard. A stable partition: the first
// 32 bits of md5(id), modulo the shards; the same in every PostgreSQL
// version, unlike hashtext. $1 shards, $2 this shard.
const inShard = `s.status = 'active'
  AND ` + shardOnly

// shardOnly: the rows of this shard, whatever their status.
const shardOnly = `($1::int <= 1 OR mod(('x' || substr(md5(s.id::text), 1, 8))::bit(32)::bigint, $1::int) = $2::int)`

// inGroup: the active rows of this shard in one window group: of its
// jurisdictions, with the anchor in (lo, hi]; or, when $7, with no
// renews_at at all, whatever their jurisdiction, so that the first group
// counts them invalid (a NULL anchor other than renews_at is not due: not
// invalid). This is the window/NULL fragment, the only one.
const inGroup = inShard + `
  AND ((($5::text IS NULL OR s.jurisdiction = $5::text)
        AND ($6::text[] IS NULL OR s.jurisdiction IS NULL OR s.jurisdiction <> ALL($6::text[]))
        AND s.{anchor} > $3 AND s.{anchor} <= $4)
       OR ($7::bool AND s.renews_at IS NULL))`

// sameNotice matches a ledger row l with its subscription row s on the
// business tuple and the email channel, as the ledger's unique index has
// it (an sms row is the sms channel's statements'); each statement adds
// the kind. Every source statement that joins the ledger uses it.
const sameNotice = `l.subscription_id = s.id::text AND l.period_start = s.period_start::date AND l.revision = COALESCE(s.notice_revision, 0) AND l.channel = 'email'`

// fromPeriod bounds the ledger's side of a join by the window's earliest
// billing period ($10, NULL when unknown; periodFrom). It is implied by
// the join (every row of the window has a period at or after it), and, a
// value known when the statement is planned, it prunes the ledger's past
// months: without it each page's anti-join walks every month's rows of the
// page's subscriptions, so the first pass grows with the ledger's history.
// A subscription whose period moves earlier while the pass runs may then
// be read as open; its claim meets the business-tuple index and is
// suppressed, as any concurrent claim is.
const fromPeriod = `($10::date IS NULL OR l.period_start >= $10::date)`

// notHandled is the anti-join on the ledger's business tuple, of kind $8,
// after the page's cursor $9 (NULL from the start), from the period $10.
// The cursor bounds the ledger's side too: it is implied by the join (both
// compare text in the same collation, so the bound is exactly implied by
// l.subscription_id = s.id::text), but PostgreSQL does not infer it, and
// without it a merge anti-join re-reads every ledger row before the cursor
// on every page (quadratic in the pass's size).
const notHandled = `NOT EXISTS (
        SELECT 1 FROM notice_ledger l
        WHERE ` + sameNotice + ` AND l.kind = $8
          AND ($9::text IS NULL OR l.subscription_id > $9::text)
          AND ` + fromPeriod + `)
  AND ($9::text IS NULL OR s.id::text > $9::text)`

// subscriptionListOpen: active subscriptions of one group whose window is
// open at now and that have no ledger row for this notice, in id order
// after a cursor. The window anchor-open <= now < anchor-close is passed
// as bounds on the kind's anchor (renews_at unless the kind names
// another): $3 = now+close (exclusive), $4 = now+open. The group
// parameters, then $8 kind, $9 cursor (NULL from the start), $10 the
// window's earliest period (openFrom; NULL when unknown), $11 page size.
//
// The id keyset lets PostgreSQL walk the primary key and merge it with the
// ledger's business-tuple index, both bounded by the cursor: 0.75 ms a
// page of 1000 at 1M subscriptions. A (renews_at, id) keyset on the
// renews_at index was measured at 30-90 ms a page (a heap page per row,
// then a probe), 40x slower for a full window; for a sparse window the
// planner still picks the renews_at index and sorts. docs/BENCHMARKS.md.
const subscriptionListOpen = `SELECT {cols}
FROM {rel} s
WHERE ` + inGroup + `
  AND ` + notHandled + `
ORDER BY s.id::text
LIMIT $11`

// subscriptionListClosed: active subscriptions of one group whose window
// has closed while the charge (for a kind anchored elsewhere, its anchor:
// the trial's end, the price change) is still ahead, with no ledger row:
// the notices to record as missed. The parameters of
// subscriptionListOpen, with $3 = now, $4 = now+close, $7 false and $10
// the closed window's earliest period (closedFrom): the closed window
// holds the notices the last passes sent, each with its years of history.
const subscriptionListClosed = `SELECT {cols}
FROM {rel} s
WHERE ` + inGroup + `
  AND s.period_start IS NOT NULL
  AND ` + notHandled + `
ORDER BY s.id::text
LIMIT $11`

// subscriptionCountOpen: how many rows subscriptionListOpen returns over
// all its pages, without the rows with no renews_at it adds for counting:
// its parameters $1-$10, with $7 false and $9, $10 NULL.
const subscriptionCountOpen = `SELECT count(*)
FROM {rel} s
WHERE ` + inGroup + `
  AND ` + notHandled

// subscriptionPeriodFrom: the earliest billing period of the rows of one
// group (the group parameters), NULL when there are none. The pass reads
// it once per window, open (for countDue and listOpen) and closed (for
// listClosed), and passes it to their statements as a value ($10,
// fromPeriod), so that PostgreSQL prunes the ledger's past months when it
// plans them. As a sub-select inside subscriptionCountDue it pruned them
// only at run time, which PostgreSQL does not cost: over 10M past rows it
// chose a parallel hash join that took 3.9 s, against 0.2 s with the
// value.
const subscriptionPeriodFrom = `SELECT min(s.period_start::date)
FROM {rel} s
WHERE ` + inGroup

// subscriptionCountDue: in one walk of one group's window (the rows
// subscriptionListOpen considers), how many have no ledger row (open: what
// it would return) and how many are due with a ledger row owned by
// another run (handled: what subscriptionCountHandled counts). A nightly
// re-run that finds open = 0 skips the group's stream: it then costs one
// indexed anti-join, not a walk plus a count. The group parameters, then
// $8 kind, $9 this run's id, $10 the window's earliest period (openFrom).
const subscriptionCountDue = `SELECT count(*) FILTER (WHERE l.subscription_id IS NULL) AS open,
       count(*) FILTER (WHERE l.subscription_id IS NOT NULL AND l.run_id <> $9
                          AND s.{anchor} > $3 AND s.{anchor} <= $4) AS handled
FROM {rel} s
LEFT JOIN notice_ledger l
       ON ` + sameNotice + ` AND l.kind = $8
      AND ` + fromPeriod + `
WHERE ` + inGroup

// subscriptionCountHandled: due notices of one group that already have a
// ledger row owned by another run (claimed, sent, failed or retried
// elsewhere): the pass's "suppressed". The group parameters ($7 false),
// then $8 kind, $9 this run's id.
const subscriptionCountHandled = `SELECT count(*)
FROM {rel} s
WHERE ` + inGroup + `
  AND EXISTS (
        SELECT 1 FROM notice_ledger l
        WHERE ` + sameNotice + ` AND l.kind = $8
          AND l.run_id <> $9)`

// subscriptionListRetry: the current rows of the retry rows'
// subscriptions (ledger.Retries), looked up by id, when in this shard,
// with their status (a row no longer active ends its retry as
// cancelled). $1 shards, $2 this shard, $3 ids (text[]).
const subscriptionListRetry = `SELECT {cols}, s.status::text AS status
FROM {rel} s
WHERE s.id::text = ANY($3::text[]) AND ` + shardOnly

// subscriptionGet: one subscription by id ($1), whatever its status, with
// the anchor of one kind, as the other statements read it (scan preview).
const subscriptionGet = `SELECT {cols}, s.status::text AS status
FROM {rel} s
WHERE s.id::text = $1`

// subscriptionSampleKeys: up to $3 ledger rows (any kind) of active
// subscriptions whose renews_at lies in ($1, $2]: notices of the current
// windows, claimed by this pass's recent predecessors, whose keys the
// secret should still derive. Found through the renews_at range and the
// business-tuple index, so its cost does not grow with the ledger's
// history (ordering the whole ledger by claimed_at did). At most $4
// (sampleProbes a key) subscriptions are looked up, so its cost does not
// grow with the number due either (joining all of them hashed every due
// row for a sample of 20: 150 ms of a 0.9 s re-run at 200k). The earliest
// sampled period bounds the ledger's side, so that its past months are
// pruned.
const subscriptionSampleKeys = `WITH s AS MATERIALIZED (
      SELECT s.id, s.period_start, s.notice_revision
      FROM {rel} s
      WHERE s.status = 'active' AND s.renews_at > $1 AND s.renews_at <= $2
      LIMIT $4)
SELECT l.notice_key, l.subscription_id, l.kind, l.period_start, l.revision
FROM s
JOIN notice_ledger l
  ON ` + sameNotice + `
 AND l.period_start >= (SELECT min(s.period_start::date) FROM s)
LIMIT $3`

// subscriptionColumns lists the columns of the source relation without
// reading a row: the start-up probe of which columns it has.
const subscriptionColumns = `SELECT * FROM {rel} LIMIT 0`

// selectList is the {cols} of the source statements: the required
// columns, the anchor (a quoted column) as anchor_at, and each optional
// column as text, or NULL where the relation lacks it.
const selectList = `s.id::text AS id, s.email::text AS email, s.renews_at, s.period_start::date AS period_start,
       s.jurisdiction::text AS jurisdiction, COALESCE(s.notice_revision, 0)::int AS revision,
       s.{anchor} AS anchor_at`

// source runs the source statements on one relation. Build it with
// newSource; it is safe for concurrent use.
type source struct {
	rel      string // quoted
	optional map[string]bool
	shard    int
	shards   int
	// byAnchor: the statements that read a kind's anchor, by the anchor
	// (quoted), filled by prepare.
	byAnchor   map[string]*anchorStatements
	sampleStmt string // subscriptionSampleKeys, filled
}

// anchorStatements are the source statements filled for one anchor.
type anchorStatements struct {
	listOpen, listClosed, countOpen, periodFrom, countDue, countHandled, listRetry, get string
}

// newSource returns the source of relation rel (quoted, QuoteSource) for
// one shard of shards, whose statements prepare fills.
func newSource(rel string, shard, shards int) *source {
	return &source{rel: rel, shard: shard, shards: shards}
}

// columnsProbe is subscriptionColumns on the relation.
func (s *source) columnsProbe() string { return fill(subscriptionColumns, s.rel, "", "") }

// prepare fills every statement once, for the optional columns the
// relation has and each of anchors (quoted columns).
func (s *source) prepare(optional map[string]bool, anchors []string) {
	s.optional = optional
	s.sampleStmt = fill(subscriptionSampleKeys, s.rel, "", "")
	s.byAnchor = map[string]*anchorStatements{}
	for _, a := range anchors {
		f := func(t string) string { return fill(t, s.rel, s.cols(), a) }
		s.byAnchor[a] = &anchorStatements{
			listOpen: f(subscriptionListOpen), listClosed: f(subscriptionListClosed),
			countOpen: f(subscriptionCountOpen), periodFrom: f(subscriptionPeriodFrom),
			countDue: f(subscriptionCountDue), countHandled: f(subscriptionCountHandled),
			listRetry: f(subscriptionListRetry), get: f(subscriptionGet),
		}
	}
}

// fill puts identifiers into a statement's slots: rel into {rel}, cols
// into {cols}, anchor into {anchor}. Only identifiers, quoted by the
// caller, ever go in; values are parameters.
func fill(template, rel, cols, anchor string) string {
	// {cols} first: it holds an {anchor} slot itself.
	return strings.NewReplacer("{anchor}", anchor, "{rel}", rel).
		Replace(strings.ReplaceAll(template, "{cols}", cols))
}

// cols is the select list with the optional columns the relation has;
// its {anchor} slot is the statement's.
func (s *source) cols() string {
	var b strings.Builder
	b.WriteString(selectList)
	for _, c := range OptionalColumns {
		q := pq.QuoteIdentifier(c)
		if s.optional[c] {
			b.WriteString(", s." + q + "::text AS " + q)
		} else {
			b.WriteString(", NULL::text AS " + q)
		}
	}
	return b.String()
}

// group returns the group parameters $1-$7 for sel with the anchor in
// (lo, hi], followed by more.
func (s *source) group(sel selection, lo, hi time.Time, withNull bool, more ...any) []any {
	var juris, overrides any // NULL: not this predicate
	if sel.jurisdiction != "" {
		juris = sel.jurisdiction
	}
	if len(sel.overrides) > 0 {
		overrides = pq.Array(sel.overrides)
	}
	return append([]any{s.shards, s.shard, lo, hi, juris, overrides, withNull}, more...)
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

// listOpen runs subscriptionListOpen. from, when known, is the window's
// earliest billing period (openFrom).
func (s *source) listOpen(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, from *time.Time, after *string, limit int) ([]sourceRow, error) {
	q, args := s.openQuery(sel, now, from, after, limit)
	return s.page(ctx, db, q, args)
}

// openQuery is subscriptionListOpen with its parameters.
func (s *source) openQuery(sel selection, now time.Time, from *time.Time, after *string, limit int) (string, []any) {
	return s.byAnchor[sel.anchor].listOpen,
		s.group(sel, now.Add(sel.close), sel.hi(now), sel.withNullTimes, sel.kind, textParam(after), dateParam(from), limit)
}

// listClosed runs subscriptionListClosed. from is the closed window's
// earliest billing period (closedFrom).
func (s *source) listClosed(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, from *time.Time, after *string, limit int) ([]sourceRow, error) {
	q, args := s.closedQuery(sel, now, from, after, limit)
	return s.page(ctx, db, q, args)
}

// closedQuery is subscriptionListClosed with its parameters.
func (s *source) closedQuery(sel selection, now time.Time, from *time.Time, after *string, limit int) (string, []any) {
	return s.byAnchor[sel.anchor].listClosed,
		s.group(sel, now, now.Add(sel.close), false, sel.kind, textParam(after), dateParam(from), limit)
}

// periodFrom runs subscriptionPeriodFrom for the rows of sel whose anchor
// is in (lo, hi] (and the rows with no renews_at, when withNull).
func (s *source) periodFrom(ctx context.Context, db sqlx.QueryerContext, sel selection, lo, hi time.Time, withNull bool) (*time.Time, error) {
	var from *time.Time
	if err := sqlx.GetContext(ctx, db, &from, s.byAnchor[sel.anchor].periodFrom, s.group(sel, lo, hi, withNull)...); err != nil {
		return nil, fmt.Errorf("window's earliest period: %w", err)
	}
	return from, nil
}

// openFrom is periodFrom of the rows countDue and listOpen consider.
func (s *source) openFrom(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time) (*time.Time, error) {
	return s.periodFrom(ctx, db, sel, now.Add(sel.close), sel.hi(now), sel.withNullTimes)
}

// closedFrom is periodFrom of the rows listClosed considers.
func (s *source) closedFrom(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time) (*time.Time, error) {
	return s.periodFrom(ctx, db, sel, now, now.Add(sel.close), false)
}

// page runs a statement that lists subscriptions.
func (s *source) page(ctx context.Context, db sqlx.QueryerContext, q string, args []any) ([]sourceRow, error) {
	rows, err := querySourceRows(ctx, db, q, args...)
	if err != nil {
		return nil, fmt.Errorf("select subscriptions: %w", err)
	}
	return rows, nil
}

// querySourceRows runs a statement whose columns are the select list (or
// a part of it) and scans its rows into sourceRows by column name, as
// sqlx.SelectContext does, but with each column's destination found once
// per statement rather than by reflection on every row.
func querySourceRows(ctx context.Context, db sqlx.QueryerContext, q string, args ...any) ([]sourceRow, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var r sourceRow
	dest, err := r.dest(cols)
	if err != nil {
		return nil, err
	}
	var out []sourceRow
	for rows.Next() {
		r = sourceRow{}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// dest returns the scan destinations of the columns cols in r, by the
// names of their db tags. A column r has no field for is an error.
func (r *sourceRow) dest(cols []string) ([]any, error) {
	dest := make([]any, len(cols))
	for i, c := range cols {
		switch c {
		case "id":
			dest[i] = &r.ID
		case "revision":
			dest[i] = intColumn{&r.Revision}
		case "renews_at":
			dest[i] = timeColumn{&r.RenewsAt}
		case "period_start":
			dest[i] = timeColumn{&r.PeriodStart}
		case "anchor_at":
			dest[i] = timeColumn{&r.AnchorAt}
		default:
			p := r.textField(c)
			if p == nil {
				return nil, fmt.Errorf("column %q has no field in sourceRow", c)
			}
			dest[i] = textColumn{p}
		}
	}
	return dest, nil
}

// textField returns r's nullable text field of column c, or nil.
func (r *sourceRow) textField(c string) **string {
	switch c {
	case "email":
		return &r.Email
	case "jurisdiction":
		return &r.Jurisdiction
	case "name":
		return &r.Name
	case "plan":
		return &r.Plan
	case "amount":
		return &r.Amount
	case "currency":
		return &r.Currency
	case "billing_interval":
		return &r.Interval
	case "billing_interval_count":
		return &r.IntervalCount
	case "locale":
		return &r.Locale
	case "time_zone":
		return &r.TimeZone
	case "phone":
		return &r.Phone
	case "email_state":
		return &r.EmailState
	case "notice_key":
		return &r.LedgerKey
	case "status":
		return &r.Status
	}
	return nil
}

// textColumn scans a nullable text column into a *string field: nil for
// NULL. (database/sql scans into a **string through package reflect.)
type textColumn struct{ p **string }

func (c textColumn) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*c.p = nil
	case string:
		*c.p = &v
	case []byte:
		s := string(v)
		*c.p = &s
	default:
		return fmt.Errorf("scan %T into a text field", v)
	}
	return nil
}

// timeColumn scans a nullable timestamp or date column into a *time.Time
// field: nil for NULL.
type timeColumn struct{ p **time.Time }

func (c timeColumn) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*c.p = nil
	case time.Time:
		*c.p = &v
	default:
		return fmt.Errorf("scan %T into a time field", v)
	}
	return nil
}

// intColumn scans a non-NULL integer column into an int field.
type intColumn struct{ p *int }

func (c intColumn) Scan(v any) error {
	i, ok := v.(int64)
	if !ok {
		return fmt.Errorf("scan %T into an int field", v)
	}
	*c.p = int(i)
	return nil
}

// retryPage is one page of a kind's retry rows (ledger.Retries) with
// their subscriptions' current rows.
type retryPage struct {
	rows []sourceRow // the rows still this pass's to retry, each with its LedgerKey
	// cancelled: the keys whose subscription is no longer active (at the
	// row's period and revision): to end as cancelled, not to retry.
	cancelled []string
	last      string // the page's last ledger key: the next page's cursor
	n         int    // ledger rows read: fewer than the limit ends the listing
}

// listRetry reads the retry rows of one kind whose window has not closed
// (ledger.Retries), in key order after a cursor, each with its
// subscription's current row (subscriptionListRetry). A row whose
// subscription is not in this shard or no longer at the row's period and
// revision is left out: it is no longer this pass's to retry, and
// ExpireRetries marks it missed once its window closes. One whose
// subscription is no longer active is named in cancelled.
func (s *source) listRetry(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, after string, limit int) (retryPage, error) {
	tks, err := ledger.Retries(ctx, db, sel.kind, now, after, limit)
	if err != nil || len(tks) == 0 {
		return retryPage{last: after}, err
	}
	ids := make([]string, 0, len(tks))
	for _, tk := range tks {
		ids = append(ids, tk.SubscriptionID)
	}
	subs, err := querySourceRows(ctx, db, s.byAnchor[sel.anchor].listRetry, s.shards, s.shard, pq.Array(ids))
	if err != nil {
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
		if deref(r.Status) != "active" {
			pg.cancelled = append(pg.cancelled, tk.Key)
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

// countDue runs subscriptionCountDue. from is the window's earliest
// period (openFrom).
func (s *source) countDue(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, runID string, from *time.Time) (due dueCount, _ error) {
	args := s.group(sel, now.Add(sel.close), sel.hi(now), sel.withNullTimes, sel.kind, runID, dateParam(from))
	if err := sqlx.GetContext(ctx, db, &due, s.byAnchor[sel.anchor].countDue, args...); err != nil {
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

// sampleKeys runs subscriptionSampleKeys.
func (s *source) sampleKeys(ctx context.Context, db sqlx.QueryerContext, lo, hi time.Time, limit int) ([]ledger.TupleKey, error) {
	var out []ledger.TupleKey
	if err := sqlx.SelectContext(ctx, db, &out, s.sampleStmt, lo, hi, limit, sampleProbes*limit); err != nil {
		return nil, fmt.Errorf("sample keys: %w", err)
	}
	return out, nil
}

// countHandled runs subscriptionCountHandled.
func (s *source) countHandled(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time, runID string) (int, error) {
	args := s.group(sel, now.Add(sel.close), sel.hi(now), false, sel.kind, runID)
	var n int
	if err := sqlx.GetContext(ctx, db, &n, s.byAnchor[sel.anchor].countHandled, args...); err != nil {
		return 0, fmt.Errorf("count handled: %w", err)
	}
	return n, nil
}

// eachPage is the one keyset loop of the pass's listings: it reads a
// listing page by page in cursor order, from the zero cursor (the start).
// page reads the page after a cursor and returns the cursor after it and
// whether it was the last. It stops at the last page or the first error.
func eachPage[C any](page func(after C) (next C, last bool, err error)) error {
	var after C
	for {
		next, last, err := page(after)
		if err != nil || last {
			return err
		}
		after = next
	}
}

// eachRowPage pages with eachPage through a listing of subscriptions in
// id order (listOpen, listClosed) of batch rows a page, handing fn each
// page that has rows.
func eachRowPage(batch int, list func(after *string) ([]sourceRow, error), fn func([]sourceRow) error) error {
	return eachPage(func(after *string) (*string, bool, error) {
		rows, err := list(after)
		if err != nil || len(rows) == 0 {
			return nil, true, err
		}
		if err := fn(rows); err != nil {
			return nil, false, err
		}
		last := rows[len(rows)-1].ID
		return &last, len(rows) < batch, nil
	})
}
