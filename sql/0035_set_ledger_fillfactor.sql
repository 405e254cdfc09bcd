-- +goose Up
-- Room on each ledger page for the outcome's new row version (issue 39).
--
-- A claim inserts a row and the pass's outcome (sent, retry, failed)
-- updates it moments later. With the default fillfactor (100) the claims
-- fill every heap page, so each outcome's new row version goes to another
-- page: PostgreSQL first WAL-logs a lock of the old version (it must let
-- go of the page while it looks for room), then the whole new version,
-- uncompressed. With half of each page left free when the claims insert,
-- the new version mostly lands on the same page: no lock record, and the
-- update record shares the unchanged prefix and suffix of the row. WAL
-- per notice of a first pass: 1,803 B to 1,650 B (pg_walinspect, 20k
-- notices; docs/BENCHMARKS.md). The price is space: a month's heap is up
-- to twice as many pages while its notices are claimed (VACUUM keeps
-- reusing the free half for the next outcomes and re-claims).
--
-- The outcome update still is not HOT (heap-only): `state` is in the
-- predicates of the quarantine and retry indexes, so every outcome also
-- inserts into the primary key and the business key (docs/BENCHMARKS.md
-- measures that remaining distance).
--
-- Lock and duration: ALTER TABLE ... SET (fillfactor) changes the catalog
-- only (SHARE UPDATE EXCLUSIVE, which claims and outcomes do not conflict
-- with) and rewrites nothing; existing pages keep their rows and only new
-- pages leave room. It runs in milliseconds on a ledger of 10M rows.
-- Partitions created later (notice_ledger_ensure_partitions) get it at
-- creation.
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

-- +goose Down
-- +goose StatementBegin
DO $do$
DECLARE
    part regclass;
BEGIN
    FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'notice_ledger'::regclass LOOP
        EXECUTE format('ALTER TABLE %s RESET (fillfactor)', part);
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
            EXECUTE format('CREATE TABLE %I (LIKE notice_ledger INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)', part);
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
