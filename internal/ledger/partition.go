package ledger

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"weak"

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
// the DEFAULT partition. One statement with each distinct month once,
// and none when db is a pool that already found or made every one of
// them (knownMonths): a pass's claim batches are of the same month or
// two, and it asked once per batch (issue 39).
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
	pool, _ := db.(*sqlx.DB)
	known := knownMonthsOf(pool)
	if known.all(months) {
		return nil
	}
	if _, err := db.ExecContext(ctx, noticePartitionsEnsure, pq.Array(months)); err != nil {
		return fmt.Errorf("create partitions: %w", err)
	}
	known.add(months)
	return nil
}

// knownMonths holds, for each pool (by a weak pointer: a pool's entry
// goes with it), the months whose partitions its ensurePartitions found
// or made, in statements that committed on their own. A partition is
// removed only by Prune, which forgets its pool's months (forgetMonths).
// Prune in another process may drop a month a pool still holds as known,
// as it could between any batch's check and its insert before: the
// month's next rows then land in the DEFAULT partition, still under the
// unique indexes, and move into the month when a claim of another
// process makes it again (notice_ledger_ensure_partitions). Prune removes
// only months before its horizon, which passes do not claim into.
var knownMonths sync.Map // weak.Pointer[sqlx.DB] -> *monthSet

// monthSet is a set of months (YYYY-MM-01), safe for concurrent use. The
// nil set knows no month and remembers none (a transaction's months are
// not known to exist until it commits).
type monthSet struct {
	mu     sync.Mutex
	months map[string]bool
}

// knownMonthsOf returns pool's set of known months, nil for no pool.
func knownMonthsOf(pool *sqlx.DB) *monthSet {
	if pool == nil {
		return nil
	}
	key := weak.Make(pool)
	if s, ok := knownMonths.Load(key); ok {
		return s.(*monthSet)
	}
	s, loaded := knownMonths.LoadOrStore(key, &monthSet{months: map[string]bool{}})
	if !loaded {
		runtime.AddCleanup(pool, func(k weak.Pointer[sqlx.DB]) { knownMonths.Delete(k) }, key)
	}
	return s.(*monthSet)
}

// forgetMonths forgets every month known of pool: Prune removed some.
func forgetMonths(pool *sqlx.DB) {
	if s := knownMonthsOf(pool); s != nil {
		s.mu.Lock()
		clear(s.months)
		s.mu.Unlock()
	}
}

// all reports whether every month of months is known (true for none).
func (s *monthSet) all(months []string) bool {
	if s == nil {
		return len(months) == 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range months {
		if !s.months[m] {
			return false
		}
	}
	return true
}

// add remembers months as known.
func (s *monthSet) add(months []string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range months {
		s.months[m] = true
	}
}
