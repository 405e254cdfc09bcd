package scan

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// CountDue returns how many notices a pass started now would try to send:
// the open, unclaimed notices of every window group, plus the retry rows it
// may re-claim. It is one count(*) per group with the predicates of the
// pass's own queries (so it reads the same index ranges once, without
// fetching rows), and an estimate only in that rows may change while the
// pass runs and invalid rows are included. It exists to give a progress bar
// its total; it writes nothing.
func (s *Pass) CountDue(ctx context.Context) (int, error) {
	total := 0
	for _, group := range s.sels {
		for _, sel := range group {
			n, err := s.src.countOpen(ctx, s.db, sel, s.cfg.Now)
			if err != nil {
				return 0, err
			}
			total += n
		}
		n, err := s.src.countRetry(ctx, s.db, group[0], s.cfg.Now)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// SubscriptionCountOpen: how many rows SubscriptionListOpen returns over
// all its pages, without the NULL renews_at rows it adds for counting.
func (s *source) countOpen(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time) (int, error) {
	args := []any{sel.kind, now.Add(sel.close), now.Add(sel.open)}
	base, juris, args := s.where(sel, args)
	q := fmt.Sprintf(`SELECT count(*)
FROM %s s
WHERE %s
  AND %s AND %s
  AND %s`, s.rel, base, juris, sel.between("$2", "$3"), notHandled(""))
	var n int
	if err := sqlx.GetContext(ctx, db, &n, q, args...); err != nil {
		return 0, fmt.Errorf("count open notices: %w", err)
	}
	return n, nil
}

// countRetry: how many retry rows of one kind listRetry returns over all
// its pages. Retry rows are few (failures whose window is still open), so
// it reads them as the pass does, rather than state the same filter twice.
func (s *source) countRetry(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time) (int, error) {
	const page = 1000
	n, after := 0, ""
	for {
		rp, err := s.listRetry(ctx, db, sel, now, after, page)
		if err != nil {
			return 0, fmt.Errorf("count retries: %w", err)
		}
		n += len(rp.rows)
		if rp.n < page {
			return n, nil
		}
		after = rp.last
	}
}
