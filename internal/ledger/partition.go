package ledger

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The ledger is partitioned by month of period_start (sql/0002): a month
// is created before its first row is written (ensurePartitions) and
// removed whole by Prune.

// Partition is one month of the ledger.
type Partition struct {
	Name string `db:"name" json:"partition"`
	From string `db:"lo" json:"from"` // first period_start it holds, YYYY-MM-DD
	To   string `db:"hi" json:"to"`   // first period_start it does not hold
	// RowsEstimate is the planner's estimate (pg_class.reltuples), -1 when
	// the month has never been analyzed: prune does not count rows, which
	// would read the whole month.
	RowsEstimate int64 `db:"rows_estimate" json:"rows_estimate"`
}

// Partitions returns the monthly partitions, oldest first.
func Partitions(ctx context.Context, db sqlx.QueryerContext) ([]Partition, error) {
	var ps []Partition
	if err := sqlx.SelectContext(ctx, db, &ps, noticePartitionList); err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	return ps, nil
}

// ensurePartitions makes sure that every month of periods (YYYY-MM-DD)
// has its partition before rows of it are inserted, so that none lands in
// the DEFAULT partition. One statement with each distinct month once.
func ensurePartitions(ctx context.Context, db sqlx.ExtContext, periods []string) error {
	seen := make(map[string]bool, 2)
	var months []string
	for _, p := range periods {
		if len(p) < 7 {
			continue
		}
		m := p[:7] + "-01"
		if !seen[m] {
			seen[m] = true
			months = append(months, m)
		}
	}
	if len(months) == 0 {
		return nil
	}
	if _, err := db.ExecContext(ctx, noticePartitionsEnsure, pq.Array(months)); err != nil {
		return fmt.Errorf("create partitions: %w", err)
	}
	return nil
}
