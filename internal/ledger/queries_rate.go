package ledger

// The statements on notice_rate (sql/0028, issue 38): the fleet's token
// buckets, leased in slots. RateTake runs both in one transaction.

// noticeRateLock makes sure every bucket of a lease has its row and locks
// them all, in the order of their names: two passes leasing overlapping
// buckets take their locks in the same order and never deadlock. A new
// bucket starts with every slot free (tat -infinity).
//
// $1 bucket names (text[], sorted).
const noticeRateLock = `
INSERT INTO notice_rate (bucket, tat, granted)
SELECT b, '-infinity', 0 FROM unnest($1::text[]) AS b ORDER BY b
ON CONFLICT (bucket) DO UPDATE SET granted = 0`

// noticeRateTake leases slots of each bucket, which noticeRateLock locked
// in this transaction, and returns each bucket's new tat and how many
// slots it granted (slots start at tat - granted * interval, one interval
// apart). A bucket's slots are spaced 1/per_second apart; the earliest a
// lease may start is burst-1 intervals before now (the bucket's burst,
// all due at once after it was idle), and it grants no slot later than
// now + ahead. So the fleet's sends of one bucket never outrun it, and a
// slot is never more than ahead in the future: a crashed pass's lease
// runs out by itself. (The 1e-6 keeps a slot that falls exactly on
// now + ahead from being lost to the division's rounding.)
//
// $1 bucket names, $2 slots wanted (int[]), $3 intervals in seconds
// (float8[]), $4 bursts (int[]), $5 now, $6 ahead in seconds.
const noticeRateTake = `
UPDATE notice_rate AS r
SET tat = s.start + make_interval(secs => s.granted * s.iv), granted = s.granted
FROM (
    SELECT x.bucket, x.iv, x.start,
           least(x.want, CASE WHEN x.start > $5::timestamptz + make_interval(secs => $6)
                              THEN 0
                              ELSE floor(extract(epoch FROM ($5::timestamptz + make_interval(secs => $6) - x.start))::float8 / x.iv + 1e-6)::int + 1
                         END) AS granted
    FROM (
        SELECT a.bucket, a.want, a.iv,
               greatest(q.tat, $5::timestamptz - make_interval(secs => (a.burst - 1) * a.iv)) AS start
        FROM unnest($1::text[], $2::int[], $3::float8[], $4::int[]) AS a(bucket, want, iv, burst)
        JOIN notice_rate q ON q.bucket = a.bucket
    ) x
) s
WHERE r.bucket = s.bucket
RETURNING r.bucket, r.tat, r.granted`
