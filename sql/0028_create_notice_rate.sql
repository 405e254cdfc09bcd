-- +goose Up
-- The fleet's send rates (issue 38): one row per token bucket of the
-- policy's rate section ("global", "sms", "domain:<name>"), shared by
-- every pass on this ledger (shards, concurrent runs, catch-ups, `scan
-- schedule`). tat is the bucket's next free send slot (the theoretical
-- arrival time of a GCRA); a pass leases the slots between it and a
-- second ahead of its clock (ledger.RateTake) and sends each notice no
-- earlier than its slot. A lease is only time: a crashed pass's slots pass
-- by within a second and nothing needs releasing. granted is the last
-- lease's slot count, so that the statement can return where it began.
--
-- UNLOGGED: a lease is worth a second, so the table need not survive a
-- crash or reach a standby (an empty table only frees every bucket), and
-- its updates, several a second per busy domain, write no WAL.
CREATE UNLOGGED TABLE IF NOT EXISTS notice_rate (
    bucket  text PRIMARY KEY,
    tat     timestamptz NOT NULL,
    granted integer NOT NULL DEFAULT 0
);

-- +goose Down
DROP TABLE IF EXISTS notice_rate;
