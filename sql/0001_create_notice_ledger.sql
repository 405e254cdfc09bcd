-- +goose Up
-- The notice ledger: one row per notice, claimed before anything leaves the
-- process. The primary key is the unique index on notice_key; a second
-- unique index on the business tuple means that a changed or rotated
-- NOTICE_KEY_SECRET (which changes every key) still cannot send a notice
-- again. Keys are hex, so they compare in the "C" collation.
CREATE TABLE IF NOT EXISTS notice_ledger (
    notice_key       text COLLATE "C" NOT NULL,
    subscription_id  text        NOT NULL,
    kind             text        NOT NULL,
    period_start     date        NOT NULL,
    revision         integer     NOT NULL DEFAULT 0,
    state            text        NOT NULL,
    claimed_at       timestamptz NOT NULL,
    sent_at          timestamptz,
    message_id       text COLLATE "C",
    provider_id      text,
    attempts         integer     NOT NULL DEFAULT 0,
    last_error       text,
    run_id           text        NOT NULL,
    renews_at        timestamptz,
    window_closes_at timestamptz,
    domain           text,
    redirected_to    text,
    cancel_token     text,
    supersedes       text COLLATE "C",
    updated_at       timestamptz,
    CONSTRAINT notice_ledger_pkey PRIMARY KEY (notice_key),
    CONSTRAINT notice_ledger_state_check
        CHECK (state IN ('claimed', 'sent', 'retry', 'failed', 'missed')),
    CONSTRAINT notice_ledger_key_check CHECK (notice_key ~ '^[0-9a-f]{64}$'),
    CONSTRAINT notice_ledger_revision_check CHECK (revision >= 0)
);

CREATE UNIQUE INDEX IF NOT EXISTS notice_ledger_business_key
    ON notice_ledger (subscription_id, kind, period_start, revision);

-- The quarantine: claims with no recorded outcome, oldest first.
CREATE INDEX IF NOT EXISTS notice_ledger_quarantine
    ON notice_ledger (claimed_at) WHERE state = 'claimed';

-- Rows a later pass may re-claim, or mark missed once the window closed.
CREATE INDEX IF NOT EXISTS notice_ledger_retry
    ON notice_ledger (window_closes_at) WHERE state = 'retry';

-- Provider events echo the Message-ID; reconcile looks claims up by it.
CREATE INDEX IF NOT EXISTS notice_ledger_message_id
    ON notice_ledger (message_id) WHERE message_id IS NOT NULL;

-- Every operator decision (resolve) and reconciliation, with who, when, why.
CREATE TABLE IF NOT EXISTS notice_ledger_resolution (
    id          bigserial PRIMARY KEY,
    notice_key  text COLLATE "C" NOT NULL REFERENCES notice_ledger (notice_key),
    from_state  text        NOT NULL,
    to_state    text        NOT NULL,
    resolved_by text        NOT NULL,
    reason      text        NOT NULL,
    resolved_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS notice_ledger_resolution_key
    ON notice_ledger_resolution (notice_key);

-- +goose Down
DROP TABLE IF EXISTS notice_ledger_resolution;
DROP TABLE IF EXISTS notice_ledger;
