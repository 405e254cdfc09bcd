package scan

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/notice"
	"scan/internal/subscription"
)

// CountDue returns how many notices a pass started now would try to send:
// the open, unclaimed notices of every window group, plus the retry rows it
// may re-claim. It is one count(*) per group with the predicates of the
// pass's own queries (so it reads the same index ranges once, without
// fetching rows), and an estimate only in that rows may change while the
// pass runs and invalid rows are included. It exists to give a progress bar
// its total; it writes nothing.
func (p *Pass) CountDue(ctx context.Context) (int, error) {
	total := 0
	for _, group := range p.sels[notice.ChannelEmail] {
		for _, sel := range group {
			n, err := p.src.countOpen(ctx, p.db, sel, p.cfg.Now)
			if err != nil {
				return 0, err
			}
			total += n
		}
		n, err := p.src.countRetry(ctx, p.db, group[0], p.cfg.Now)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// countRetry: how many retry rows of one kind ListRetry returns over all
// its pages. Retry rows are few (failures whose window is still open), so
// it reads them as the pass does, rather than state the same filter twice.
func (s source) countRetry(ctx context.Context, db sqlx.QueryerContext, sel selection, now time.Time) (int, error) {
	const page = 1000
	n := 0
	err := subscription.EachPage(func(after string) (string, bool, error) {
		rp, err := s.ListRetry(ctx, db, sel.kind, sel.anchor, now, after, page)
		if err != nil {
			return "", false, fmt.Errorf("count retries: %w", err)
		}
		n += len(rp.Rows)
		return rp.Last, rp.N < page, nil
	})
	return n, err
}
