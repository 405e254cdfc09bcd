-- +goose NO TRANSACTION
-- +goose Up
-- The delivery objective's range of window_closes_at (ledger.Objective,
-- sql/0033) from a BRIN index instead of a btree (issue 39).
--
-- 0033's btree put one entry per claim into the index, and a second per
-- outcome (the outcome's update is not heap-only: `state` is in the
-- partial indexes' predicates): about 130 B of WAL a notice, 8% of a
-- first pass's WAL, for a statement that runs once at the end of a pass.
-- A BRIN index keeps one (min, max) per 32 heap pages. A claim or outcome
-- that lands in a block range not yet summarized (the pages a pass is
-- filling) writes nothing to it, and one whose value lies within its
-- range's summary writes nothing either; autosummarize summarizes each
-- range once it is full (autovacuum's work items). The objective still
-- reads only the ranges whose windows may have closed in its 30 days:
-- a month's rows are claimed as their windows open, so a range's windows
-- lie close together, and the ledger's past months (each a partition)
-- are skipped by their summaries as by the btree. PostgreSQL rechecks
-- every row of a matching range, so the count is exact.
--
-- Lock and duration: one month at a time. The partitioned index is
-- created on the parent alone (ON ONLY: a catalog change), then each
-- month's index is built and attached in a transaction of its own (the
-- COMMIT in the loop; this migration runs outside goose's transaction),
-- so a month's SHARE lock (reads go on; its claims and outcomes wait) is
-- held only while that month is read once, sequentially, with no sort:
-- 2.4 s for all 17 months of a 1.02M-row ledger, so about 1.5 s for the
-- largest month of a 10M-row one (docs/BENCHMARKS.md). A month created
-- meanwhile gets its index when it is attached. The btree's DROP takes
-- ACCESS EXCLUSIVE for a catalog change only. Re-running it after an
-- interruption carries on where it stopped.
-- +goose StatementBegin
DO $do$
DECLARE
    part regclass;
    idx  text;
BEGIN
    CREATE INDEX IF NOT EXISTS notice_ledger_window_closes_brin
        ON ONLY notice_ledger USING brin (window_closes_at)
        WITH (pages_per_range = 32, autosummarize = on);
    COMMIT;
    FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'notice_ledger'::regclass LOOP
        idx := (SELECT relname FROM pg_class WHERE oid = part) || '_window_closes_brin';
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING brin (window_closes_at) '
                       'WITH (pages_per_range = 32, autosummarize = on)', idx, part);
        EXECUTE format('ALTER INDEX notice_ledger_window_closes_brin ATTACH PARTITION %I', idx);
        COMMIT;
    END LOOP;
END
$do$;
-- +goose StatementEnd
DROP INDEX IF EXISTS notice_ledger_window_closes;

-- +goose Down
CREATE INDEX IF NOT EXISTS notice_ledger_window_closes
    ON notice_ledger (window_closes_at);
DROP INDEX IF EXISTS notice_ledger_window_closes_brin;
