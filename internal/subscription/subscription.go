// Package subscription owns the operator's source relation: the table or
// view of subscriptions a pass reads (named with --source). It holds the
// statements on it (statements.go: named constants, noun first, as
// internal/ledger's are), the required and optional column lists, the row
// type the statements return and its scanners, and the start-up probe of
// which columns the relation has. Open probes once; a *Source then fills
// no template and reads no catalog again.
//
// Several statements join the relation with the ledger's table,
// notice_ledger, on the business tuple (an anti-join: the subscriptions
// already handled never leave the database). They read the source
// relation, page by page in its id order, so they live here: what they
// name of the ledger is SQL text (its table and the columns of its unique
// index), not a Go import. It takes from internal/ledger only the
// ledger's own rule for an email notice carried on (ledger.CarriedOnSQL),
// its retry rows (ListRetry joins ledger.Retries with their
// subscriptions' current rows) and its key type (ledger.TupleKey); it
// never imports internal/send.
//
// Beside the statements: a pass's window groups and their bounds at its
// now (Window, DueBounds, At, which reads a page at a time), the keyset
// loops over a listing (EachPage, EachRowPage), and what a row's optional
// columns say (Content: amount, currency, interval, locale, time zone).
//
// Every method of a Source takes the sqlx.QueryerContext to run on, so
// the caller owns the transaction.
package subscription

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/usage"
)

// RequiredColumns are the columns the source relation must have.
var RequiredColumns = []string{"id", "email", "status", "renews_at", "period_start", "jurisdiction", "notice_revision"}

// OptionalColumns are read when present (they reach the message); each
// is read as text and checked by the pass, so that a bad value is a bad
// row, never a failed query.
var OptionalColumns = []string{"name", "plan", "amount", "currency", "billing_interval", "billing_interval_count", "locale", "time_zone", "phone"}

// DefaultAnchor is the anchor column of a kind that names none, a
// required column read as it is, whatever its type.
const DefaultAnchor = "renews_at"

// ConfigError is a source relation a pass cannot read, found by Open
// before anything was written. Field names the setting ("source",
// "shard", or a kind's "notices[KIND].anchor").
type ConfigError = usage.Error

// ErrNotFound: Get found no row with the id it was given.
var ErrNotFound = errors.New("no such subscription")

// QuoteRelation quotes a relation name, optionally schema-qualified
// ("billing.subscriptions"), as SQL identifiers. Every character is
// allowed inside the quotes; a name with more than two parts or an empty
// part is refused.
func QuoteRelation(name string) (string, error) {
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

// Shard is the part of the relation a Source reads: the rows whose id
// hashes to I modulo N (inShard). The zero value is the whole relation.
type Shard struct{ I, N int }

// Anchor names the anchor column of one kind: its window is measured
// from it. Open checks that the relation has it (and, other than
// DefaultAnchor, as a timestamptz) and fills the statements for it.
type Anchor struct{ Kind, Column string }

// Row is one subscription as the statements return it. Each column is
// nullable text or a time except id and revision; the pass checks them.
type Row struct {
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
	LedgerKey     *string    `db:"notice_key"` // retry rows only (the caller sets it)
	Status        *string    `db:"status"`     // ListByID and Get only
	Phone         *string    `db:"phone"`      // the sms channel's number (issue 30)
	// EmailState is the state of the notice's email row, read by the
	// sms channel's statement only ("" for none).
	EmailState *string `db:"email_state"`
}

// Group is one window group of one kind as the statements select it: the
// default window (every jurisdiction without an override) or one
// jurisdiction's override.
type Group struct {
	Kind string
	// Anchor is the column the window is measured from (unquoted; one of
	// the anchors Open was given).
	Anchor string
	// Jurisdiction: "" for the default group, which leaves out Overrides.
	Jurisdiction string
	Overrides    []string
	// WithNullTimes also returns active rows with NULL renews_at (so the
	// pass counts them invalid once), in ListOpen, CountDue and
	// PeriodFrom; the other reads ignore it.
	WithNullTimes bool
	// ConfirmWithin is the kind's confirm_within (0: none), for
	// ListFallback: an email accepted that long ago and not confirmed
	// delivered goes on to sms.
	ConfirmWithin time.Duration
}

// Source runs the statements on one relation, for one shard. Build it
// with Open; it is safe for concurrent use.
type Source struct {
	rel      string // quoted
	optional map[string]bool
	shard    Shard
	// byAnchor: the statements that read a kind's anchor, by the anchor
	// (unquoted), filled by prepare.
	byAnchor   map[string]*anchorStatements
	sampleStmt string // subscriptionSampleKeys, filled
}

// anchorStatements are the statements filled for one anchor.
type anchorStatements struct {
	listOpen, listClosed, countOpen, periodFrom, countDue, countHandled, listByID, get string
	listFallback, listClosedSMS                                                        string // the sms channel's
}

// Open checks the relation named relation (QuoteRelation) for shard of
// the relation: it must exist and be readable, have the required columns
// and each anchor; the optional columns it has are read, the others are
// NULL. It reads the relation's columns once (no row) and fills every
// statement; a *ConfigError names what is wrong. An empty relation is
// "subscriptions".
func Open(ctx context.Context, db sqlx.QueryerContext, relation string, shard Shard, anchors []Anchor) (*Source, error) {
	if relation == "" {
		relation = "subscriptions"
	}
	if shard.N == 0 {
		shard.N = 1
	}
	if shard.N < 1 || shard.I < 0 || shard.I >= shard.N {
		return nil, &ConfigError{Field: "shard", Msg: fmt.Sprintf("%d/%d is not a shard: need 0 <= I < N", shard.I, shard.N)}
	}
	rel, err := QuoteRelation(relation)
	if err != nil {
		return nil, &ConfigError{Field: "source", Msg: err.Error()}
	}
	s := &Source{rel: rel, shard: shard}
	have, types, err := s.probe(ctx, db)
	if err != nil {
		return nil, err
	}
	for _, c := range RequiredColumns {
		if !have[c] {
			return nil, &ConfigError{Field: "source", Msg: fmt.Sprintf("relation %s has no column %q (required: %s)", rel, c, strings.Join(RequiredColumns, ", "))}
		}
	}
	if err := s.checkAnchors(anchors, have, types); err != nil {
		return nil, err
	}
	optional := map[string]bool{}
	for _, c := range OptionalColumns {
		optional[c] = have[c]
	}
	s.prepare(optional, anchors)
	return s, nil
}

// Shard is the shard the Source reads.
func (s *Source) Shard() Shard { return s.shard }

// probe reads the relation's columns and their types without a row
// (subscriptionColumns).
func (s *Source) probe(ctx context.Context, db sqlx.QueryerContext) (have map[string]bool, types map[string]string, _ error) {
	rows, err := db.QueryContext(ctx, fill(subscriptionColumns, s.rel, "", ""))
	if err != nil {
		if isUndefined(err) {
			return nil, nil, &ConfigError{Field: "source", Msg: fmt.Sprintf("relation %s does not exist or is not readable: %v", s.rel, err)}
		}
		return nil, nil, fmt.Errorf("probe source: %w", err)
	}
	cols, err := rows.ColumnTypes()
	rows.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("probe source: %w", err)
	}
	have, types = map[string]bool{}, map[string]string{}
	for _, c := range cols {
		have[c.Name()] = true
		types[c.Name()] = c.DatabaseTypeName()
	}
	return have, types, nil
}

// checkAnchors refuses a kind whose anchor column the source lacks, or
// whose anchor (other than renews_at) is not a timestamptz: its window
// could not be measured, or not without guessing a time zone.
func (s *Source) checkAnchors(anchors []Anchor, have map[string]bool, types map[string]string) error {
	for _, k := range anchors {
		a := k.Column
		field := "notices[" + k.Kind + "].anchor"
		if !have[a] {
			return &ConfigError{Field: field, Msg: fmt.Sprintf("relation %s has no column %q, the anchor of kind %s", s.rel, a, k.Kind)}
		}
		// renews_at is a required column, read as it always was; another
		// anchor must say which instant it is.
		if t := types[a]; a != DefaultAnchor && t != "TIMESTAMPTZ" {
			return &ConfigError{Field: field, Msg: fmt.Sprintf("column %q of relation %s is %s, not timestamptz (map it with a view: %s::timestamptz)", a, s.rel, strings.ToLower(t), a)}
		}
	}
	return nil
}

// isUndefined: the relation or its schema does not exist, or the role
// may not read it.
func isUndefined(err error) bool {
	var pe *pq.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case "42P01", "3F000", "42501": // undefined_table, invalid_schema_name, insufficient_privilege
			return true
		}
	}
	return false
}

// prepare fills every statement once, for the optional columns the
// relation has and each of anchors.
func (s *Source) prepare(optional map[string]bool, anchors []Anchor) {
	s.optional = optional
	s.sampleStmt = fill(subscriptionSampleKeys, s.rel, "", "")
	s.byAnchor = map[string]*anchorStatements{}
	for _, a := range anchors {
		if s.byAnchor[a.Column] != nil {
			continue
		}
		q := pq.QuoteIdentifier(a.Column)
		f := func(t string) string { return fill(t, s.rel, s.cols(), q) }
		s.byAnchor[a.Column] = &anchorStatements{
			listOpen: f(subscriptionListOpen), listClosed: f(subscriptionListClosed),
			countOpen: f(subscriptionCountOpen), periodFrom: f(subscriptionPeriodFrom),
			countDue: f(subscriptionCountDue), countHandled: f(subscriptionCountHandled),
			listByID: f(subscriptionListRetry), get: f(subscriptionGet),
			listFallback: f(subscriptionListFallback), listClosedSMS: f(subscriptionListClosedSMS),
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
func (s *Source) cols() string {
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

// statements returns the statements of an anchor; one Open was not
// given is an error (the caller's mistake, not the operator's).
func (s *Source) statements(anchor string) (*anchorStatements, error) {
	st := s.byAnchor[anchor]
	if st == nil {
		return nil, fmt.Errorf("anchor %q: not one the source was opened with", anchor)
	}
	return st, nil
}

// Reads reports whether the Source was opened for the anchor column
// anchor, so that a Group with it can be read.
func (s *Source) Reads(anchor string) bool { return s.byAnchor[anchor] != nil }
