-- +goose Up
-- The ledger, partitioned by billing period (range on period_start, one
-- partition a calendar month), so that retention is `scan prune` detaching
-- and dropping whole months instead of a bulk DELETE, and every index of a
-- month stays the size of a month.
--
-- What changes, and why each guarantee holds:
--  - The primary key is (notice_key, period_start): a unique index on a
--    partitioned table must contain the partition key. The key is an HMAC
--    of the tuple, period included, so a key names one period and the pair
--    is exactly as unique as the key was. Look-ups by key alone probe
--    each month's primary key.
--  - The business tuple (subscription_id, kind, period_start, revision)
--    contains period_start already: its unique index is unchanged, so a
--    changed secret still cannot send a notice again.
--  - The message_id index is gone: a Message-ID is the key's first 32 hex
--    characters, so reconcile finds it by a prefix range on the primary
--    key. One index fewer for every claim and every outcome to write.
--  - notice_ledger_resolution loses its foreign key (a foreign key to a
--    partitioned table must name the whole primary key, and would stop a
--    month from being detached); it gains period_start, so prune removes
--    a month's decisions with the month. Resolve writes both in one
--    transaction with the row locked, as before.
--
-- New months are created ahead by notice_ledger_ensure_partitions, which
-- the ledger calls before every claim and backfill statement with the
-- months of its rows; a DEFAULT partition catches anything else, and the
-- function moves such rows into their month when it creates it.
--
-- The existing rows are copied in this migration's transaction: the old
-- table is renamed away (ACCESS EXCLUSIVE until commit), every row is
-- inserted into its month, the old table is dropped. README says how long
-- that holds the lock per million rows.

ALTER TABLE notice_ledger_resolution
    DROP CONSTRAINT IF EXISTS notice_ledger_resolution_notice_key_fkey;

ALTER TABLE notice_ledger RENAME TO notice_ledger_0001;
ALTER INDEX notice_ledger_pkey RENAME TO notice_ledger_0001_pkey;
ALTER INDEX notice_ledger_business_key RENAME TO notice_ledger_0001_business_key;
DROP INDEX notice_ledger_quarantine;
DROP INDEX notice_ledger_retry;
DROP INDEX notice_ledger_message_id;

CREATE TABLE notice_ledger (
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
    CONSTRAINT notice_ledger_state_check
        CHECK (state IN ('claimed', 'sent', 'retry', 'failed', 'missed')),
    CONSTRAINT notice_ledger_key_check CHECK (notice_key ~ '^[0-9a-f]{64}$'),
    CONSTRAINT notice_ledger_revision_check CHECK (revision >= 0)
) PARTITION BY RANGE (period_start);

-- The safety net: a row whose month has no partition yet lands here.
CREATE TABLE notice_ledger_default PARTITION OF notice_ledger DEFAULT;

-- notice_ledger_ensure_partitions creates the monthly partition of every
-- date in months that has none (notice_ledger_pYYYYMM), and returns how
-- many it created. It creates each as a plain table and ATTACHes it, which
-- takes SHARE UPDATE EXCLUSIVE on notice_ledger (a running pass's reads
-- and writes go on) rather than the ACCESS EXCLUSIVE of CREATE TABLE ...
-- PARTITION OF; rows of that month found in the DEFAULT partition are
-- moved in first, under a lock on the DEFAULT partition alone. Two
-- sessions creating the same month are serialized by an advisory lock and
-- the loser's duplicate_table is ignored. The common call, every month
-- present, only looks names up. SECURITY DEFINER: a pass whose role may
-- write the ledger but not own it can still get next month's partition.
-- +goose StatementBegin
CREATE FUNCTION notice_ledger_ensure_partitions(months date[]) RETURNS integer
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

SELECT notice_ledger_ensure_partitions(
    ARRAY(SELECT DISTINCT date_trunc('month', period_start)::date FROM notice_ledger_0001));

INSERT INTO notice_ledger (
    notice_key, subscription_id, kind, period_start, revision, state, claimed_at,
    sent_at, message_id, provider_id, attempts, last_error, run_id, renews_at,
    window_closes_at, domain, redirected_to, cancel_token, supersedes, updated_at)
SELECT notice_key, subscription_id, kind, period_start, revision, state, claimed_at,
       sent_at, message_id, provider_id, attempts, last_error, run_id, renews_at,
       window_closes_at, domain, redirected_to, cancel_token, supersedes, updated_at
FROM notice_ledger_0001;

-- The indexes, built once the rows are in (a sorted build per month is
-- several times faster than inserting every row into every index).
SET LOCAL maintenance_work_mem = '256MB';
ALTER TABLE notice_ledger
    ADD CONSTRAINT notice_ledger_pkey PRIMARY KEY (notice_key, period_start);

CREATE UNIQUE INDEX notice_ledger_business_key
    ON notice_ledger (subscription_id, kind, period_start, revision);

-- The quarantine: claims with no recorded outcome, oldest first.
CREATE INDEX notice_ledger_quarantine
    ON notice_ledger (claimed_at) WHERE state = 'claimed';

-- Rows a later pass may re-claim, or mark missed once the window closed.
CREATE INDEX notice_ledger_retry
    ON notice_ledger (window_closes_at) WHERE state = 'retry';

ALTER TABLE notice_ledger_resolution ADD COLUMN period_start date;
UPDATE notice_ledger_resolution r SET period_start = o.period_start
FROM notice_ledger_0001 o WHERE o.notice_key = r.notice_key;
CREATE INDEX notice_ledger_resolution_period
    ON notice_ledger_resolution (period_start);

DROP TABLE notice_ledger_0001;

-- +goose Down
-- Back to one table (copying every row); the months' partitions go with
-- the partitioned table.
ALTER TABLE notice_ledger RENAME TO notice_ledger_0002;
ALTER INDEX notice_ledger_pkey RENAME TO notice_ledger_0002_pkey;
ALTER INDEX notice_ledger_business_key RENAME TO notice_ledger_0002_business_key;
ALTER INDEX notice_ledger_quarantine RENAME TO notice_ledger_0002_quarantine;
ALTER INDEX notice_ledger_retry RENAME TO notice_ledger_0002_retry;
CREATE TABLE notice_ledger (LIKE notice_ledger_0002 INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO notice_ledger SELECT * FROM notice_ledger_0002;
ALTER TABLE notice_ledger ADD CONSTRAINT notice_ledger_pkey PRIMARY KEY (notice_key);
CREATE UNIQUE INDEX notice_ledger_business_key
    ON notice_ledger (subscription_id, kind, period_start, revision);
CREATE INDEX notice_ledger_quarantine
    ON notice_ledger (claimed_at) WHERE state = 'claimed';
CREATE INDEX notice_ledger_retry
    ON notice_ledger (window_closes_at) WHERE state = 'retry';
CREATE INDEX notice_ledger_message_id
    ON notice_ledger (message_id) WHERE message_id IS NOT NULL;
DROP TABLE notice_ledger_0002;
DROP FUNCTION notice_ledger_ensure_partitions(date[]);
DROP INDEX notice_ledger_resolution_period;
ALTER TABLE notice_ledger_resolution DROP COLUMN period_start;
ALTER TABLE notice_ledger_resolution ADD FOREIGN KEY (notice_key) REFERENCES notice_ledger (notice_key);
