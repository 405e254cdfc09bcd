package ledger

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/notice"
)

// Backfilled is one notice that an earlier system already sent.
type Backfilled struct {
	Key string
	notice.Tuple
	SentAt    time.Time
	MessageID string
}

// Backfill inserts notices as sent and returns how many were inserted; the
// rest were already in the ledger. It writes in chunks of 1000, all in
// the caller's transaction tx (WithTx), so that a failed import writes
// nothing.
func Backfill(ctx context.Context, tx *sqlx.Tx, runID string, bs []Backfilled) (inserted int, err error) {
	for start := 0; start < len(bs); start += 1000 {
		end := min(start+1000, len(bs))
		chunk := bs[start:end]
		n := len(chunk)
		keys, subs, kinds, periods, revs, sent, msg := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		for i, b := range chunk {
			keys[i], subs[i], kinds[i] = b.Key, b.SubscriptionID, b.Kind
			periods[i] = b.PeriodStart.Format(dateLayout)
			revs[i] = strconv.Itoa(b.Revision)
			sent[i] = b.SentAt.UTC().Format(tsLayout)
			msg[i] = b.MessageID
		}
		if err := ensurePartitions(ctx, tx, periods); err != nil {
			return 0, fmt.Errorf("backfill: %w", err)
		}
		var got []string
		if err := sqlx.SelectContext(ctx, tx, &got, noticeBackfill, pq.Array(keys), pq.Array(subs), pq.Array(kinds),
			pq.Array(periods), pq.Array(revs), pq.Array(sent), pq.Array(msg), runID); err != nil {
			return 0, fmt.Errorf("backfill: %w", err)
		}
		inserted += len(got)
	}
	return inserted, nil
}
