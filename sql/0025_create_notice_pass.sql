-- +goose Up
-- What `scan status` reads (issue 35), apart from the ledger's rows.
--
-- notice_pass: one row per pass of `scan run` (and each firing of `scan
-- schedule`), written when it starts (ended_at NULL) and again when it
-- ends: completed says it ran to its end without an error; summary holds
-- its counts by result (scan.Summary.Counts), never an address. A pass
-- killed mid-way keeps ended_at NULL. `scan status` reads the last row of
-- each shard through notice_pass_shard.
CREATE TABLE notice_pass (
    run_id     text        PRIMARY KEY,
    shard      integer     NOT NULL,
    shards     integer     NOT NULL,
    started_at timestamptz NOT NULL,
    ended_at   timestamptz,
    completed  boolean     NOT NULL DEFAULT false,
    error      text,
    summary    jsonb
);
CREATE INDEX notice_pass_shard ON notice_pass (shard, started_at DESC);

-- notice_receipt: per provider, the last request `scan receive` committed
-- (written after its transaction committed, so that concurrent requests
-- never wait on this row while they hold their own locks).
CREATE TABLE notice_receipt (
    provider     text COLLATE "C" PRIMARY KEY,
    committed_at timestamptz NOT NULL,
    events       bigint      NOT NULL DEFAULT 0
);

-- The rows that ended undelivered (failed, missed) by when they last
-- changed: `scan status` counts those of the last 24 h from here instead
-- of reading the whole ledger (noticeCountUnreachedSince). Partial, so
-- it holds only the rows that did not go out.
CREATE INDEX IF NOT EXISTS notice_ledger_unreached
    ON notice_ledger ((COALESCE(updated_at, claimed_at))) WHERE state IN ('failed', 'missed');

-- +goose Down
DROP INDEX IF EXISTS notice_ledger_unreached;
DROP TABLE notice_receipt;
DROP TABLE notice_pass;
