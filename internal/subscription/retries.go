package subscription

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// RetryPage is one page of a kind's retry rows (ledger.Retries) with
// their subscriptions' current rows.
type RetryPage struct {
	Rows []Row // the rows still the pass's to retry, each with its LedgerKey
	// Cancelled: the keys whose subscription is no longer active (at the
	// row's period and revision): to end as cancelled, not to retry.
	Cancelled []string
	Last      string // the page's last ledger key: the next page's cursor
	N         int    // ledger rows read: fewer than the limit ends the listing
}

// ListRetry reads the retry rows of kind (anchored at anchor) whose
// window has not closed at now (ledger.Retries), in key order after a
// cursor, each with its subscription's current row (ListByID). A row whose
// subscription is not in this shard or no longer at the row's period and
// revision is left out: it is no longer this pass's to retry, and
// ledger.ExpireRetries marks it missed once its window closes. One whose
// subscription is no longer active is named in Cancelled.
func (s *Source) ListRetry(ctx context.Context, db sqlx.QueryerContext, kind, anchor string, now time.Time, after string, limit int) (RetryPage, error) {
	tks, err := ledger.Retries(ctx, db, kind, now, after, limit)
	if err != nil || len(tks) == 0 {
		return RetryPage{Last: after}, err
	}
	ids := make([]string, 0, len(tks))
	for _, tk := range tks {
		ids = append(ids, tk.SubscriptionID)
	}
	subs, err := s.ListByID(ctx, db, anchor, ids)
	if err != nil {
		return RetryPage{}, err
	}
	byID := make(map[string]Row, len(subs))
	for _, r := range subs {
		byID[r.ID] = r
	}
	pg := RetryPage{Last: tks[len(tks)-1].Key, N: len(tks)}
	for _, tk := range tks {
		r, ok := byID[tk.SubscriptionID]
		if !ok || r.PeriodStart == nil || !SameDay(*r.PeriodStart, tk.PeriodStart) || r.Revision != tk.Revision {
			continue
		}
		if r.Status == nil || *r.Status != "active" {
			pg.Cancelled = append(pg.Cancelled, tk.Key)
			continue
		}
		key := tk.Key
		r.LedgerKey = &key
		pg.Rows = append(pg.Rows, r)
	}
	return pg, nil
}

// SameDay compares two dates as the ledger's business tuple does.
func SameDay(a, b time.Time) bool {
	return a.Format(time.DateOnly) == b.Format(time.DateOnly)
}

// EachPage is the one keyset loop over a listing: it reads the listing
// page by page in cursor order, from the zero cursor (the start). page
// reads the page after a cursor and returns the cursor after it and
// whether it was the last. It stops at the last page or the first error.
func EachPage[C any](page func(after C) (next C, last bool, err error)) error {
	var after C
	for {
		next, last, err := page(after)
		if err != nil || last {
			return err
		}
		after = next
	}
}

// EachRowPage pages with EachPage through a listing of rows in id order
// (ListOpen, ListClosed, ListFallback) of batch rows a page, handing fn
// each page that has rows.
func EachRowPage(batch int, list func(after *string) ([]Row, error), fn func([]Row) error) error {
	return EachPage(func(after *string) (*string, bool, error) {
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
