// Package ledgertest holds what tests ask of the ledger and the job itself
// never does: CountByState, a whole-ledger tally that a pass has no use
// for. Its statements are named constants, as in ledger/queries.go; it
// reads only, and is safe for concurrent use.
package ledgertest

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// noticeCountByState counts the ledger's rows per state, every month and
// the DEFAULT partition included.
const noticeCountByState = `
SELECT state, count(*) AS count FROM notice_ledger GROUP BY state`

// CountByState counts the ledger's rows per state; a state no row is in
// is absent from the map.
func CountByState(ctx context.Context, db sqlx.QueryerContext) (map[ledger.State]int, error) {
	var rows []struct {
		State ledger.State `db:"state"`
		Count int          `db:"count"`
	}
	if err := sqlx.SelectContext(ctx, db, &rows, noticeCountByState); err != nil {
		return nil, fmt.Errorf("count by state: %w", err)
	}
	m := make(map[ledger.State]int, len(rows))
	for _, r := range rows {
		m[r.State] = r.Count
	}
	return m, nil
}
