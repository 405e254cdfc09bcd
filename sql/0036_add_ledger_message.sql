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
-- EXCLUSIVE on the ledger for milliseconds, whatever the row count: this
-- migration and 0037 ran in 0.19 s on a ledger of 10M rows in 14 months
-- (docs/proof.md). Months created later inherit the columns and their
-- storage.
ALTER TABLE notice_ledger
    ADD COLUMN message_attempt integer,
    ADD COLUMN message_dict    smallint,
    ADD COLUMN message         bytea;
-- Already compressed: PostgreSQL's own compression would only cost CPU.
ALTER TABLE notice_ledger ALTER COLUMN message SET STORAGE EXTERNAL;

-- Room on each page for the wider outcome (sql/0035 left half of each page
-- for the outcome's new row version). With its message (about 290 B) the
-- outcome's version is about twice the claim's (about 650 B against 330):
-- at fillfactor 50 half the outcomes found no room on their claim's page,
-- so PostgreSQL WAL-logged a lock of the old version and the whole new one
-- on another page (pg_walinspect, 200k notices: 100k Heap LOCK and 25k
-- UPDATE+INIT records, 2,212 B of WAL a notice). A page whose claims fill
-- 30% keeps room for their outcomes: 30% x (1 + 650/330) is about 89%.
-- Catalog only, as in sql/0035 (SHARE UPDATE EXCLUSIVE, nothing
-- rewritten; pages already filled keep their rows); months created later
-- (notice_ledger_ensure_partitions, restated from sql/0035 with 30) get
-- it at creation.
-- +goose StatementBegin
DO $do$
DECLARE
    part regclass;
BEGIN
    FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'notice_ledger'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (fillfactor = 30)', part);
    END LOOP;
END
$do$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION notice_ledger_ensure_partitions(months date[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
DECLARE
    m       date;
    lo      date;
    hi      date;
    part    text;
    created integer := 0;
BEGIN
    FOREACH m IN ARRAY months LOOP
        CONTINUE WHEN m IS NULL;
        lo := date_trunc('month', m)::date;
        hi := (lo + interval '1 month')::date;
        part := 'notice_ledger_p' || to_char(lo, 'YYYYMM');
        CONTINUE WHEN to_regclass(quote_ident(part)) IS NOT NULL;
        PERFORM pg_advisory_xact_lock(736361, 2);
        BEGIN
            EXECUTE format('CREATE TABLE %I (LIKE notice_ledger INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) WITH (fillfactor = 30)', part);
            -- The range as a constraint, so that ATTACH need not scan.
            EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (period_start >= %L AND period_start < %L)',
                           part, part || '_range', lo, hi);
            LOCK TABLE notice_ledger_default IN ACCESS EXCLUSIVE MODE;
            EXECUTE format('WITH moved AS (DELETE FROM notice_ledger_default WHERE period_start >= %L AND period_start < %L RETURNING *) '
                           'INSERT INTO %I SELECT * FROM moved', lo, hi, part);
            EXECUTE format('ALTER TABLE notice_ledger ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
            EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', part, part || '_range');
            created := created + 1;
        EXCEPTION WHEN duplicate_table THEN
            NULL; -- another session created it first
        END;
    END LOOP;
    RETURN created;
END
$fn$;
-- +goose StatementEnd

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
-- +goose StatementBegin
DO $do$
DECLARE
    part regclass;
BEGIN
    FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'notice_ledger'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (fillfactor = 50)', part);
    END LOOP;
END
$do$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION notice_ledger_ensure_partitions(months date[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
DECLARE
    m       date;
    lo      date;
    hi      date;
    part    text;
    created integer := 0;
BEGIN
    FOREACH m IN ARRAY months LOOP
        CONTINUE WHEN m IS NULL;
        lo := date_trunc('month', m)::date;
        hi := (lo + interval '1 month')::date;
        part := 'notice_ledger_p' || to_char(lo, 'YYYYMM');
        CONTINUE WHEN to_regclass(quote_ident(part)) IS NOT NULL;
        PERFORM pg_advisory_xact_lock(736361, 2);
        BEGIN
            EXECUTE format('CREATE TABLE %I (LIKE notice_ledger INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) WITH (fillfactor = 50)', part);
            -- The range as a constraint, so that ATTACH need not scan.
            EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (period_start >= %L AND period_start < %L)',
                           part, part || '_range', lo, hi);
            LOCK TABLE notice_ledger_default IN ACCESS EXCLUSIVE MODE;
            EXECUTE format('WITH moved AS (DELETE FROM notice_ledger_default WHERE period_start >= %L AND period_start < %L RETURNING *) '
                           'INSERT INTO %I SELECT * FROM moved', lo, hi, part);
            EXECUTE format('ALTER TABLE notice_ledger ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
            EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', part, part || '_range');
            created := created + 1;
        EXCEPTION WHEN duplicate_table THEN
            NULL; -- another session created it first
        END;
    END LOOP;
    RETURN created;
END
$fn$;
-- +goose StatementEnd
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
