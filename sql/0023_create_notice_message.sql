-- +goose Up
-- Proof of notice (issue 37): the exact bytes each attempt handed to the
-- provider (the MIME message of an email, the body of an sms), kept for
-- the whole retention so that `scan proof` can hand them to a card
-- network or a regulator, and verify them against the digest the ledger
-- recorded (notice_ledger.message_sha256) byte for byte.
--
-- The message itself, DEFLATE-compressed (RFC 1951) against a preset
-- dictionary kept in notice_message_dict (dict; 0 is none), not the inputs
-- of a re-render: a re-render months later would need the templates, the
-- CLDR data and the MIME encoder of the release that sent it, and any
-- change to one of them makes the proof fail to verify. DEFLATE is a
-- frozen format any language inflates; the dictionary is data in this
-- database, written once by a migration (0024) and never changed, so a
-- message is rebuilt from the database alone. About 260 bytes for the
-- demo's emails (815 without the dictionary; docs/proof.md).
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
    dict         smallint NOT NULL,
    body         bytea   NOT NULL,
    PRIMARY KEY (period_start, key, attempt)
);
-- Already compressed: PostgreSQL's own compression would only cost CPU.
ALTER TABLE notice_message ALTER COLUMN body SET STORAGE EXTERNAL;

-- The preset dictionaries, by id, each immutable once a message refers to
-- it. A few kilobytes each, kept for as long as the schema.
CREATE TABLE notice_message_dict (
    id   smallint PRIMARY KEY CHECK (id > 0),
    body bytea    NOT NULL
);

-- +goose Down
DROP TABLE notice_message_dict;
DROP TABLE notice_message;
