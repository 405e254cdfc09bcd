package ledger

// The statements on notice_rate (sql/0028, issue 38): the fleet's token
// buckets, leased in slots, one statement a lease (RateTake).

// noticeRateTake leases slots of each bucket (notice_rate_take, sql/0043:
// the lease's one statement, kept as a function so that it is parsed and
// planned once per session, not at every lease) and returns each bucket's
// new tat and how many slots it granted (slots start at tat - granted *
// interval, one interval apart), no slot later than now + ahead. The
// buckets' rows are locked in the order of their names; on its own (not
// in a caller's transaction) the statement is its own transaction.
//
// $1 bucket names (text[], sorted, each once), $2 slots wanted (int[]),
// $3 intervals in seconds (float8[]), $4 bursts (int[]), $5 now, $6 ahead
// in seconds.
const noticeRateTake = `
SELECT lease_bucket, lease_tat, lease_granted
FROM notice_rate_take($1::text[], $2::int[], $3::float8[], $4::int[], $5::timestamptz, $6::float8)`
