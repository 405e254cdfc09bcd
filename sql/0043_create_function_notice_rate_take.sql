-- +goose Up
-- A lease of the fleet's send slots (issue 38, ledger.RateTake) as a
-- function, so that each lease is one short call (issue 39). As a
-- statement sent with its parameters it was parsed and planned anew at
-- every lease (lib/pq's unnamed statements; named ones would not survive
-- PgBouncer's transaction pooling): about 0.5 ms of the backend's CPU a
-- lease, four to seven leases a second for a pass that is not paced. A
-- PL/pgSQL function's statement is parsed once per session and its plan
-- kept: about 0.15 ms a lease.
--
-- It leases slots of each bucket of p_buckets (sorted, each once) and
-- returns each bucket's new tat and how many slots it granted (slots start
-- at tat - granted * interval, one interval apart). A bucket's slots are
-- spaced p_ivs seconds apart; the earliest a lease may start is burst-1
-- intervals before p_now (the bucket's burst, all due at once after it
-- was idle), and it grants no slot later than p_now + p_ahead seconds. So
-- the fleet's sends of one bucket never outrun it, and a slot is never
-- more than p_ahead in the future: a crashed pass's lease runs out by
-- itself. (The 1e-6 keeps a slot that falls exactly on p_now + p_ahead
-- from being lost to the division's rounding.)
--
-- A bucket without a row yet is inserted as if its tat were -infinity
-- (every slot free). A bucket with one is updated by ON CONFLICT DO
-- UPDATE, which locks its row and computes the lease from the row's
-- latest committed tat (waiting for a concurrent lease of the bucket to
-- commit first). The rows are inserted, and so locked, in the order of
-- their names: two passes leasing overlapping buckets take their locks in
-- the same order and never deadlock. One statement: called on its own it
-- is its own transaction.
--
-- Lock and duration: a new function, a catalog change only.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION notice_rate_take(
    p_buckets text[], p_wants integer[], p_ivs float8[], p_bursts integer[],
    p_now timestamptz, p_ahead float8)
RETURNS TABLE (lease_bucket text, lease_tat timestamptz, lease_granted integer)
LANGUAGE plpgsql AS $fn$
BEGIN
    RETURN QUERY
    WITH a AS (
        SELECT a.bucket, a.want, a.iv, a.horizon,
               p_now - make_interval(secs => (a.burst - 1) * a.iv) AS earliest
        FROM (SELECT u.*, p_now + make_interval(secs => p_ahead) AS horizon
              FROM unnest(p_buckets, p_wants, p_ivs, p_bursts) AS u(bucket, want, iv, burst)) a)
    INSERT INTO notice_rate AS r (bucket, tat, granted)
    SELECT a.bucket, a.earliest + make_interval(secs => g.n * a.iv), g.n
    FROM a
    CROSS JOIN LATERAL (
        SELECT least(a.want, CASE WHEN a.earliest > a.horizon THEN 0
                                  ELSE floor(extract(epoch FROM (a.horizon - a.earliest))::float8 / a.iv + 1e-6)::int + 1
                             END) AS n) g
    ORDER BY a.bucket
    ON CONFLICT (bucket) DO UPDATE
    SET (tat, granted) = (
        SELECT x.start + make_interval(secs => g.n * x.iv), g.n
        FROM (SELECT greatest(r.tat, a.earliest) AS start, a.want, a.iv, a.horizon
              FROM a WHERE a.bucket = excluded.bucket) x
        CROSS JOIN LATERAL (
            SELECT least(x.want, CASE WHEN x.start > x.horizon THEN 0
                                      ELSE floor(extract(epoch FROM (x.horizon - x.start))::float8 / x.iv + 1e-6)::int + 1
                                 END) AS n) g)
    RETURNING r.bucket, r.tat, r.granted;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS notice_rate_take(text[], integer[], float8[], integer[], timestamptz, float8);
