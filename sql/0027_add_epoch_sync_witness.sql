-- +goose Up
-- A switchover is a non-event (issue 38): each pass's epoch also records
-- whether its claims were made under synchronous replication, so that a
-- pass finding a new timeline can tell a lossless switchover from a
-- failover or a restore that can have lost claims.
--
-- sync_standbys: standbys in sync_state 'sync' when the pass began (from
-- pg_stat_replication; 0 where the role may not read their state);
-- sync_commit: what its claims commit with (at least on); system_id: the cluster's
-- system identifier (pg_control_system). NULL on rows recorded before
-- this migration: such a row proves nothing, so a new timeline after it
-- still refuses. `scan recover` records the same witness.
--
-- kind 'switchover': a pass found a new timeline whose branch point the
-- last epoch's synchronous standby had acknowledged, and went on.
ALTER TABLE notice_ledger_epoch
    ADD COLUMN sync_standbys int,
    ADD COLUMN sync_commit   text,
    ADD COLUMN system_id     text,
    DROP CONSTRAINT notice_ledger_epoch_kind_check,
    ADD CONSTRAINT notice_ledger_epoch_kind_check
        CHECK (kind IN ('pass', 'recover', 'none_lost', 'switchover'));

-- +goose Down
DELETE FROM notice_ledger_epoch WHERE kind = 'switchover';
ALTER TABLE notice_ledger_epoch
    DROP CONSTRAINT notice_ledger_epoch_kind_check,
    ADD CONSTRAINT notice_ledger_epoch_kind_check CHECK (kind IN ('pass', 'recover', 'none_lost')),
    DROP COLUMN system_id,
    DROP COLUMN sync_commit,
    DROP COLUMN sync_standbys;
