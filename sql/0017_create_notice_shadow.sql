-- +goose Up
-- Shadow mode (issue 27): what `scan run --shadow` would have claimed,
-- apart from the ledger, once per notice however many shadow passes see
-- it. would_claim_at is the first shadow pass's now that found it due;
-- opens_at and closes_at are its window (in the recipient's zone, by the
-- rule kept beside it), against which `scan shadow report` judges a legacy
-- sender's sends. period_start lets `scan prune` remove a month's shadow
-- rows with the month.
CREATE TABLE notice_shadow (
    subscription_id text        NOT NULL,
    kind            text        NOT NULL,
    period_start    date        NOT NULL,
    revision        integer     NOT NULL,
    notice_key      text COLLATE "C" NOT NULL,
    would_claim_at  timestamptz NOT NULL,
    opens_at        timestamptz NOT NULL,
    closes_at       timestamptz NOT NULL,
    renews_at       timestamptz,
    rule            text,
    time_zone       text,
    run_id          text        NOT NULL,
    PRIMARY KEY (subscription_id, kind, period_start, revision)
);
CREATE INDEX notice_shadow_period ON notice_shadow (period_start);

-- +goose Down
DROP TABLE notice_shadow;
