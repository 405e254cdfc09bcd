-- +goose Up
-- Proof of notice (issue 37): the current attempt's message moves into the
-- ledger row, beside its digest (message_sha256).
--
-- Until now each outcome inserted a row into notice_message (sql/0023): a
-- new tuple, a primary-key entry and the ON CONFLICT confirm record, about
-- 560 B of WAL and 13 us of PostgreSQL CPU a notice on top of the outcome's
-- UPDATE, which rewrites the ledger row anyway. Kept in that row, the
-- message costs only its own bytes in the new row version: no tuple, no
-- index entry, no round trip (docs/proof.md, "Storage").
--
-- message_attempt is the attempt the message was handed over in (the
-- ledger's attempts then), message_dict the dictionary it was compressed
-- against (notice_message_dict), message the compressed bytes. No index
-- reads them, so they never stand in the way of a heap-only update. The
-- pass writes them and has no need to read them: the role that runs it
-- can be granted SELECT on every other column (docs/proof.md, privileges).
--
-- Lock and duration: ADD COLUMN without a default and SET STORAGE change
-- the catalog only (nothing is rewritten or scanned); they take ACCESS
-- EXCLUSIVE on the ledger for milliseconds, whatever the row count
-- (measured in docs/proof.md on 10M rows). Months created later inherit
-- the columns and their storage.
ALTER TABLE notice_ledger
    ADD COLUMN message_attempt integer,
    ADD COLUMN message_dict    smallint,
    ADD COLUMN message         bytea;
-- Already compressed: PostgreSQL's own compression would only cost CPU.
ALTER TABLE notice_ledger ALTER COLUMN message SET STORAGE EXTERNAL;

-- Earlier attempts stay provable: when a retry of the notice is claimed
-- (noticeReclaim, the only statement that sets attempts) while the row
-- holds the message an earlier attempt handed over, this trigger copies
-- that message into notice_message under its attempt, in the same
-- statement; the row keeps it until the new attempt's outcome replaces it
-- (or, when the new attempt hands nothing over, clears it). The outcome's
-- UPDATE, which every notice runs, fires no trigger at all: the rare
-- re-claim pays, and only for a row with a message (the WHEN clause is
-- evaluated without calling the function). The function reads the old
-- row version it is handed (OLD), not the table, so the pass's role needs
-- INSERT on notice_message and no read right on the message columns. A
-- message already kept for that attempt is left as it is.
-- +goose StatementBegin
CREATE FUNCTION notice_ledger_keep_earlier_message() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$
BEGIN
    INSERT INTO notice_message (period_start, key, attempt, dict, body)
    VALUES (OLD.period_start, decode(OLD.notice_key, 'hex'), OLD.message_attempt, OLD.message_dict, OLD.message)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$fn$;
-- +goose StatementEnd

CREATE TRIGGER notice_ledger_keep_earlier_message
AFTER UPDATE OF attempts ON notice_ledger
FOR EACH ROW
WHEN (OLD.message IS NOT NULL)
EXECUTE FUNCTION notice_ledger_keep_earlier_message();

-- +goose Down
-- The messages go back where the code before this migration reads them.
INSERT INTO notice_message (period_start, key, attempt, dict, body)
SELECT period_start, decode(notice_key, 'hex'), message_attempt, message_dict, message
FROM notice_ledger WHERE message IS NOT NULL
ON CONFLICT DO NOTHING;
DROP TRIGGER notice_ledger_keep_earlier_message ON notice_ledger;
DROP FUNCTION notice_ledger_keep_earlier_message();
ALTER TABLE notice_ledger
    DROP COLUMN message,
    DROP COLUMN message_dict,
    DROP COLUMN message_attempt;
