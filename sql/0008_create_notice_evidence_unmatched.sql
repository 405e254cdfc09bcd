-- +goose Up
-- Provider events that name no notice the ledger holds (issue 29), kept
-- instead of dropped: the second witness. After a restore or a failover the
-- ledger may lack the claim of a notice that went out; the provider's
-- events of it (arriving late, or read by `scan recover`) are kept here
-- under the Message-ID's local part, the first 32 hex characters of the
-- notice key, and the claim statement consults them: a claim minted for
-- such a key is recorded sent from that evidence instead of being sent.
--
-- key32 is the first 32 characters of the notice key the event echoed, or
-- the local part of its Message-ID. Once a claim takes the evidence it is
-- moved to notice_evidence under the notice. scan prune removes what is
-- older than its horizon (recorded_at), with the months it removes.
CREATE TABLE notice_evidence_unmatched (
    key32       text COLLATE "C" NOT NULL,
    provider_id text,
    attempt     integer     NOT NULL,
    kind        text        NOT NULL,
    state       text        NOT NULL,
    event       text        NOT NULL,
    occurred_at timestamptz,
    detail      text,
    recorded_at timestamptz NOT NULL,
    recorded_by text        NOT NULL
);

CREATE UNIQUE INDEX notice_evidence_unmatched_event
    ON notice_evidence_unmatched (key32, attempt, event, COALESCE(occurred_at, '-infinity'::timestamptz));
CREATE INDEX notice_evidence_unmatched_recorded ON notice_evidence_unmatched (recorded_at);
-- What the claim statement looks each batch's keys up by: the key alone,
-- of the events that witness a notice went out only (the statement's own
-- predicate), so that the index stays small enough to stay cached beside
-- the ledger when a million events are kept.
CREATE INDEX notice_evidence_unmatched_witness ON notice_evidence_unmatched (key32)
    WHERE kind IN ('accepted', 'delivered', 'deferred', 'bounce_soft', 'bounce_hard',
                   'complaint', 'engagement');

-- +goose Down
DROP TABLE notice_evidence_unmatched;
