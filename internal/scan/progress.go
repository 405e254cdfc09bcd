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
		n, err := s.src.countRetry(ctx, s.db, group[0].kind, s.cfg.Now)
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
  AND %s AND s.renews_at > $2 AND s.renews_at <= $3
  AND %s`, s.rel, base, juris, notHandled(""))
	var n int
	if err := sqlx.GetContext(ctx, db, &n, q, args...); err != nil {
		return 0, fmt.Errorf("count open notices: %w", err)
	}
	return n, nil
}

// SubscriptionCountRetry: how many ledger rows of one kind in state retry,
// with an open window, SubscriptionListRetry returns over all its pages.
func (s *source) countRetry(ctx context.Context, db sqlx.QueryerContext, kind string, now time.Time) (int, error) {
	args := []any{kind, now}
	where, _, args := s.where(selection{}, args)
	q := fmt.Sprintf(`SELECT count(*)
FROM notice_ledger l
JOIN %s s ON `+sameNotice+`
WHERE l.state = 'retry' AND l.kind = $1
  AND (l.window_closes_at IS NULL OR l.window_closes_at > $2)
  AND %s`, s.rel, where)
	var n int
	if err := sqlx.GetContext(ctx, db, &n, q, args...); err != nil {
		return 0, fmt.Errorf("count retries: %w", err)
	}
	return n, nil
}
