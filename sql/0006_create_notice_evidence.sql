-- +goose Up
-- Evidence per attempt (issue 19).
--
-- Two nullable columns without a default on the ledger: a catalog change
-- only, instant on the partitioned table whatever its size (no month is
-- rewritten, no row is read).
--  - message_sha256: SHA-256 of the exact message handed to the provider
--    (the raw MIME, which is also SES's raw content), written with the
--    outcome by the pass, for an ambiguous outcome too. Proof of content.
--  - settled_by: who settled the current attempt when not the pass's own
--    outcome (NULL): 'operator' (scan resolve) or the kind of provider
--    event that settled it ('accepted', 'delivered', ...). A row settled
--    sent from 'accepted' is the one a later "not sent" event of the same
--    attempt may overrule. A re-claim clears both.
--
-- notice_evidence keeps every provider event that named a notice, per
-- attempt, whatever the row's state: proof of notice. A replayed event is
-- kept once (the unique index). It carries period_start so that scan prune
-- deletes a month's evidence with the month, as it does the decisions in
-- notice_ledger_resolution; it has no foreign key, which would stop a
-- month from being detached.
ALTER TABLE notice_ledger
    ADD COLUMN message_sha256 bytea,
    ADD COLUMN settled_by text;

CREATE TABLE notice_evidence (
    notice_key   text COLLATE "C" NOT NULL,
    period_start date        NOT NULL,
    attempt      integer     NOT NULL,
    kind         text        NOT NULL,
    event        text        NOT NULL,
    occurred_at  timestamptz,
    detail       text,
    recorded_at  timestamptz NOT NULL
);

CREATE UNIQUE INDEX notice_evidence_event
    ON notice_evidence (notice_key, attempt, event, COALESCE(occurred_at, '-infinity'::timestamptz));
CREATE INDEX notice_evidence_period ON notice_evidence (period_start);

-- +goose Down
DROP TABLE notice_evidence;
ALTER TABLE notice_ledger
    DROP COLUMN message_sha256,
    DROP COLUMN settled_by;
