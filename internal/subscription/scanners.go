package subscription

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// queryRows runs a statement whose columns are the select list (or
// a part of it) and scans its rows into Rows by column name, as
// sqlx.SelectContext does, but with each column's destination found once
// per statement rather than by reflection on every row.
func queryRows(ctx context.Context, db sqlx.QueryerContext, q string, args ...any) ([]Row, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var r Row
	dest, err := r.dest(cols)
	if err != nil {
		return nil, err
	}
	var out []Row
	for rows.Next() {
		r = Row{}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// dest returns the scan destinations of the columns cols in r, by the
// names of their db tags. A column r has no field for is an error.
func (r *Row) dest(cols []string) ([]any, error) {
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
				return nil, fmt.Errorf("column %q has no field in Row", c)
			}
			dest[i] = textColumn{p}
		}
	}
	return dest, nil
}

// textField returns r's nullable text field of column c, or nil.
func (r *Row) textField(c string) **string {
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
