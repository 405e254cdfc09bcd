-- +goose Up
-- Where each pass found the ledger's database (issue 29).
--
-- A pass records, in one statement before it claims anything, the
-- database's WAL timeline and position (from pg_walfile_name and
-- pg_current_wal_lsn, which need no superuser): a promotion (failover) or a
-- point-in-time recovery starts a new timeline, so a pass that finds a
-- timeline other than the last one recorded here knows that the ledger may
-- have lost claims whose notices went out, and refuses to claim (exit 4)
-- until `scan recover` records an acknowledged epoch (kind 'recover' or
-- 'none_lost', with who and why).
--
-- timeline and lsn are NULL where the server does not tell them (a managed
-- service that hides the WAL functions): such a row checks nothing.
CREATE TABLE notice_ledger_epoch (
    id          bigserial   PRIMARY KEY,
    kind        text        NOT NULL CHECK (kind IN ('pass', 'recover', 'none_lost')),
    run_id      text        NOT NULL,
    timeline    bigint,
    lsn         pg_lsn,
    recorded_at timestamptz NOT NULL,
    recorded_by text,
    reason      text,
    since       timestamptz
);

-- +goose Down
DROP TABLE notice_ledger_epoch;
