package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// RateAsk asks one fleet-wide token bucket (notice_rate, sql/0028) for
// Want send slots. PerSecond (above 0) and Burst (at least 1) are the
// policy's bucket: every pass on the ledger is expected to ask a bucket
// with the same ones.
type RateAsk struct {
	Bucket    string
	Want      int
	PerSecond float64
	Burst     int
}

// RateGrant is what RateTake leased of one bucket: Granted slots, the
// first at Start and each next one interval (1/PerSecond) later; none
// before Start may be used by anyone else. Next is the bucket's next free
// slot after this lease: a bucket that granted fewer than asked has room
// again once Next is within the lease's ahead.
type RateGrant struct {
	Bucket  string
	Start   time.Time
	Granted int
	Next    time.Time
}

// RateTake leases send slots of the buckets of asks, at most ahead past
// now, in one statement (noticeRateTake, sql/0043): db may be the pool (the
// statement is its own transaction) or a caller's transaction. Grants come
// back in the order of asks' bucket names (sorted); an ask of Want 0 or
// less is left out, and each bucket may be asked once. Safe to call from
// any number of processes at once: the buckets' row locks, taken in name
// order, serialise the leases of a bucket.
func RateTake(ctx context.Context, db sqlx.ExtContext, now time.Time, ahead time.Duration, asks []RateAsk) ([]RateGrant, error) {
	asks = slices.DeleteFunc(slices.Clone(asks), func(a RateAsk) bool { return a.Want <= 0 })
	if len(asks) == 0 {
		return nil, nil
	}
	slices.SortFunc(asks, func(a, b RateAsk) int { return cmp.Compare(a.Bucket, b.Bucket) })
	names := make([]string, len(asks))
	wants := make([]int64, len(asks))
	ivs := make([]float64, len(asks))
	bursts := make([]int64, len(asks))
	for i, a := range asks {
		if !(a.PerSecond > 0) || a.Burst < 1 {
			return nil, fmt.Errorf("rate take: bucket %q: per_second %v, burst %d: want a rate above 0 and a burst of at least 1", a.Bucket, a.PerSecond, a.Burst)
		}
		names[i], wants[i], ivs[i], bursts[i] = a.Bucket, int64(a.Want), 1/a.PerSecond, int64(a.Burst)
	}
	rows, err := db.QueryxContext(ctx, noticeRateTake, pq.Array(names), pq.Array(wants), pq.Array(ivs), pq.Array(bursts), now, ahead.Seconds())
	if err != nil {
		return nil, fmt.Errorf("rate take: %w", err)
	}
	defer rows.Close()
	iv := make(map[string]float64, len(asks))
	for _, a := range asks {
		iv[a.Bucket] = 1 / a.PerSecond
	}
	out := make([]RateGrant, 0, len(asks))
	for rows.Next() {
		var g RateGrant
		if err := rows.Scan(&g.Bucket, &g.Next, &g.Granted); err != nil {
			return nil, fmt.Errorf("rate take: %w", err)
		}
		g.Start = g.Next.Add(-time.Duration(float64(g.Granted) * iv[g.Bucket] * float64(time.Second)))
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rate take: %w", err)
	}
	slices.SortFunc(out, func(a, b RateGrant) int { return cmp.Compare(a.Bucket, b.Bucket) })
	return out, nil
}
