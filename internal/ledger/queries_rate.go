package ledger

// The statements on notice_rate (sql/0028, issue 38): the fleet's token
// buckets, leased in slots, one statement a lease (RateTake).

// noticeRateTake leases slots of each bucket in one statement, and
// returns each bucket's new tat and how many slots it granted (slots start
// at tat - granted * interval, one interval apart). A bucket's slots are
// spaced 1/per_second apart; the earliest a lease may start is burst-1
// intervals before now (the bucket's burst, all due at once after it was
// idle), and it grants no slot later than now + ahead. So the fleet's
// sends of one bucket never outrun it, and a slot is never more than
// ahead in the future: a crashed pass's lease runs out by itself. (The
// 1e-6 keeps a slot that falls exactly on now + ahead from being lost to
// the division's rounding.)
//
// A bucket without a row yet is inserted as if its tat were -infinity
// (every slot free): its lease starts at that earliest start. A bucket
// with one is updated by ON CONFLICT DO UPDATE, which locks its row and
// computes the lease from the row's latest committed tat (waiting for a
// concurrent lease of the bucket to commit first). The rows are inserted,
// and so locked, in the order of their names: two passes leasing
// overlapping buckets take their locks in the same order and never
// deadlock. One statement, so it needs no transaction of its own: its
// locks are held until it commits, and a pass's lease costs one round
// trip (it was BEGIN, a locking upsert, the update, COMMIT: issue 39).
//
// $1 bucket names (text[], sorted, each once), $2 slots wanted (int[]),
// $3 intervals in seconds (float8[]), $4 bursts (int[]), $5 now, $6 ahead
// in seconds.
var noticeRateTake = `
WITH a AS (
    SELECT a.bucket, a.want, a.iv,
           $5::timestamptz - make_interval(secs => (a.burst - 1) * a.iv) AS earliest
    FROM unnest($1::text[], $2::int[], $3::float8[], $4::int[]) AS a(bucket, want, iv, burst))
INSERT INTO notice_rate AS r (bucket, tat, granted)
SELECT a.bucket, a.earliest + make_interval(secs => g.n * a.iv), g.n
FROM a
CROSS JOIN LATERAL (SELECT ` + rateGranted("a.earliest") + ` AS n) g
ORDER BY a.bucket
ON CONFLICT (bucket) DO UPDATE
SET (tat, granted) = (
    SELECT x.start + make_interval(secs => g.n * x.iv), g.n
    FROM (SELECT greatest(r.tat, a.earliest) AS start, a.want, a.iv
          FROM a WHERE a.bucket = excluded.bucket) x
    CROSS JOIN LATERAL (SELECT ` + rateGranted("x.start") + ` AS n) g)
RETURNING r.bucket, r.tat, r.granted`

// rateGranted is how many slots a lease of a bucket whose first free
// slot is start grants (noticeRateTake): as many as wanted (want, in
// scope), one every iv seconds (iv, in scope) from start, none after
// $5 + $6 seconds.
func rateGranted(start string) string {
	return `least(want, CASE WHEN ` + start + ` > $5::timestamptz + make_interval(secs => $6)
                      THEN 0
                      ELSE floor(extract(epoch FROM ($5::timestamptz + make_interval(secs => $6) - ` + start + `))::float8 / iv + 1e-6)::int + 1
                 END)`
}
