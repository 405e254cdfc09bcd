-- +goose Up
-- Proof of notice (issue 37): the exact bytes each attempt handed to the
-- provider (the MIME message of an email, the body of an sms), kept for
-- the whole retention so that `scan proof` can hand them to a card
-- network or a regulator, and verify them against the digest the ledger
-- recorded (notice_ledger.message_sha256) byte for byte.
--
-- The message itself, DEFLATE-compressed (RFC 1951, no dictionary), not
-- the inputs of a re-render: a re-render months later would need the
-- templates, the CLDR data and the MIME encoder of the release that sent
-- it, and any change to one of them makes the proof fail to verify.
-- DEFLATE is a frozen format any language inflates. About 830 bytes for
-- the demo's emails, 150 for an sms (docs/proof.md).
--
-- Written by the pass in the statement that records the outcome (no extra
-- round trip), one row per attempt that handed a message over. The key is
-- the notice key's 32 bytes, not its 64 hex characters; the primary key
-- leads with period_start so that one index serves the proof's lookup of
-- a notice (whose period the ledger row gives) and `scan prune`'s removal
-- of the periods before its horizon. No foreign key: it would stop a month
-- of the ledger from being detached. The pass needs INSERT on this table
-- and nothing else: it never reads it (docs/proof.md, privileges).
CREATE TABLE notice_message (
    period_start date    NOT NULL,
    key          bytea   NOT NULL,
    attempt      integer NOT NULL,
    body         bytea   NOT NULL,
    PRIMARY KEY (period_start, key, attempt)
);
-- Already compressed: PostgreSQL's own compression would only cost CPU.
ALTER TABLE notice_message ALTER COLUMN body SET STORAGE EXTERNAL;

-- +goose Down
DROP TABLE notice_message;
