-- +goose Up
-- The key's CHECK constraint without a regular expression (issue 12).
-- `notice_key ~ '^[0-9a-f]{64}$'` ran the regex engine on every insert and
-- every update of the ledger (PostgreSQL evaluates a table's CHECK
-- constraints on each new row version, whatever columns changed): a tenth
-- or more of the backend's CPU in a pass. The same rule, 64 characters, each
-- a lower-case hex digit, said with length() and ltrim() (which strips the
-- leading characters found in its set: all of them, only if every one is a
-- hex digit). Adding it validates every row under ACCESS EXCLUSIVE, one
-- cheap expression per row: README says how long per million rows.
ALTER TABLE notice_ledger
    DROP CONSTRAINT notice_ledger_key_check,
    ADD CONSTRAINT notice_ledger_key_check
        CHECK (length(notice_key) = 64 AND ltrim(notice_key, '0123456789abcdef') = '');

-- +goose Down
ALTER TABLE notice_ledger
    DROP CONSTRAINT notice_ledger_key_check,
    ADD CONSTRAINT notice_ledger_key_check CHECK (notice_key ~ '^[0-9a-f]{64}$');
