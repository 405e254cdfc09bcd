package ledger

// The statements of passes, receipts and `scan status` (sql/0025), apart
// from queries.go so that they merge without touching the ledger's.

// statusSession readies a read-only transaction for `scan status`: no
// JIT compilation. Its statements read a few rows through indexes, but
// over a ledger of many partitions the planner's estimates for the
// last day's rows can pass jit_above_cost, and compiling the plan then
// takes 0.3 s of a statement that runs in 10 ms (measured over 1M rows).
const statusSession = `SET LOCAL jit = off`

// passStart records that the pass $1 (shard $2 of $3) started at $4.
// A run id seen before (a retried start) keeps its first row.
const passStart = `
INSERT INTO notice_pass (run_id, shard, shards, started_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (run_id) DO NOTHING`

// passEnd records the end of the pass $1 at $2: whether it completed
// ($3), its error ($4, NULL for none) and its counts ($5, jsonb).
const passEnd = `
UPDATE notice_pass
SET ended_at = $2, completed = $3, error = $4, summary = $5::jsonb
WHERE run_id = $1`

// passLastByShard returns the last pass started of each shard, by shard:
// one descent of notice_pass_shard per shard (a loose index scan), so
// that a long history of passes is never read whole.
const passLastByShard = `
WITH RECURSIVE shards AS (
    (SELECT shard FROM notice_pass ORDER BY shard LIMIT 1)
    UNION ALL
    SELECT (SELECT p.shard FROM notice_pass p WHERE p.shard > s.shard ORDER BY p.shard LIMIT 1)
    FROM shards s WHERE s.shard IS NOT NULL)
SELECT p.run_id, p.shard, p.shards, p.started_at, p.ended_at, p.completed,
       COALESCE(p.error, '') AS error, COALESCE(p.summary::text, '{}') AS summary
FROM shards s
CROSS JOIN LATERAL (SELECT * FROM notice_pass x WHERE x.shard = s.shard
                    ORDER BY x.started_at DESC LIMIT 1) p
WHERE s.shard IS NOT NULL
ORDER BY p.shard`

// receiptRecord records that the receiver committed a request of
// provider $1 at $2 carrying $3 events; an older time never overwrites a
// newer one (replicas race), and every request's events are added.
const receiptRecord = `
INSERT INTO notice_receipt AS r (provider, committed_at, events)
VALUES ($1, $2, $3)
ON CONFLICT (provider) DO UPDATE
SET committed_at = GREATEST(r.committed_at, excluded.committed_at), events = r.events + excluded.events`

// receiptList returns the last request committed per provider.
const receiptList = `
SELECT provider, committed_at, events FROM notice_receipt ORDER BY provider`

// noticeCountRetry counts the rows in state retry, through the retry
// index, which holds only those.
const noticeCountRetry = `
SELECT count(*) FROM notice_ledger WHERE state = 'retry'`

// noticeCountUnreachedSince counts, of the rows that changed at or after
// $1, the missed rows, and the notices that reached the customer by no
// channel: a failed or missed row none of whose tuple's rows was sent,
// is in retry or was cancelled (noticeListUndelivered's notices, less
// those still in quarantine, which status counts apart). The candidates
// are read through notice_ledger_unreached (sql/0025); each one's rows
// through the business key, by a LATERAL look-up per candidate: as a NOT
// EXISTS the planner may pick a hash anti-join that reads the whole
// ledger (3.9 s over 1M rows, against a few milliseconds).
const noticeCountUnreachedSince = `
WITH recent AS (
    SELECT subscription_id, kind, period_start, revision, state
    FROM notice_ledger
    WHERE state IN ('failed', 'missed') AND COALESCE(updated_at, claimed_at) >= $1)
SELECT (SELECT count(*) FROM recent WHERE state = 'missed') AS missed,
       (SELECT count(*)
        FROM (SELECT DISTINCT subscription_id, kind, period_start, revision FROM recent) t
        CROSS JOIN LATERAL (
            SELECT bool_or(l.state NOT IN ('failed', 'missed', 'claimed')) AS reached
            FROM notice_ledger l
            WHERE l.subscription_id = t.subscription_id AND l.kind = t.kind
              AND l.period_start = t.period_start AND l.revision = t.revision) x
        WHERE NOT x.reached) AS undelivered`
