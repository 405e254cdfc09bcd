-- The reference subscriptions relation: the columns `scan run` reads (see the
-- operator contract), as a table. It is used by the demo (tools/seed) and the
-- tests; `scan migrate` does not create it. In production, map your own
-- schema onto these columns with a view and pass it with --source.
--
-- Idempotent: safe to apply twice.

CREATE TABLE IF NOT EXISTS subscriptions (
    id              text        PRIMARY KEY,
    email           text,                                -- recipient; rows without a valid one are counted "invalid"
    status          text        NOT NULL DEFAULT 'active', -- only 'active' is eligible
    renews_at       timestamptz,                         -- when the card is charged
    period_start    date,                                -- the billing period the charge starts
    jurisdiction    text,                                -- NULL or e.g. 'US-CA': selects the policy's window
    notice_revision integer     NOT NULL DEFAULT 0,      -- bump to send a corrected notice on purpose
    name            text,                                -- optional, used in the message
    plan            text                                 -- optional, used in the message
);

-- The scan's window queries select active rows by a range of renews_at
-- (renews_at > now+close AND renews_at <= now+open); the partial index keeps
-- that a range scan over the few rows due, whatever the table's size.
CREATE INDEX IF NOT EXISTS subscriptions_active_renews_at_idx
    ON subscriptions (renews_at)
    WHERE status = 'active';
