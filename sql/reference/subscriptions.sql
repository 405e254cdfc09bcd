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
    plan            text,                                -- optional, used in the message
    -- What the notice says (optional; each used where present):
    amount          numeric,                             -- the renewal's charge in major units (12.99)
    currency        text,                                -- ISO 4217 code of amount (EUR)
    billing_interval text,                               -- day, week, month or year
    billing_interval_count integer,                      -- NULL: 1
    locale          text,                                -- BCP 47 (de-AT); NULL or unknown: the policy's default_locale
    time_zone       text,                                -- IANA (Europe/Vienna); NULL or unknown: the policy's default_time_zone
    trial_ends_at   timestamptz,                         -- the anchor of a trial_ending kind; NULL: no trial
    phone           text                                 -- E.164 (+14155550100) for the sms channel; NULL: none
);

-- Idempotent for a table created before these columns existed.
ALTER TABLE subscriptions
    ADD COLUMN IF NOT EXISTS amount numeric,
    ADD COLUMN IF NOT EXISTS currency text,
    ADD COLUMN IF NOT EXISTS billing_interval text,
    ADD COLUMN IF NOT EXISTS billing_interval_count integer,
    ADD COLUMN IF NOT EXISTS locale text,
    ADD COLUMN IF NOT EXISTS time_zone text,
    ADD COLUMN IF NOT EXISTS trial_ends_at timestamptz,
    ADD COLUMN IF NOT EXISTS phone text;

-- The scan's window queries select active rows by a range of renews_at
-- (renews_at > now+close AND renews_at <= now+open); the partial index keeps
-- that a range scan over the few rows due, whatever the table's size.
CREATE INDEX IF NOT EXISTS subscriptions_active_renews_at_idx
    ON subscriptions (renews_at)
    WHERE status = 'active';

-- The same for a kind anchored on trial_ends_at (trial_ending).
CREATE INDEX IF NOT EXISTS subscriptions_active_trial_ends_at_idx
    ON subscriptions (trial_ends_at)
    WHERE status = 'active' AND trial_ends_at IS NOT NULL;
