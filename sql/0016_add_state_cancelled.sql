-- +goose Up
-- A terminal state for a retry row whose subscription is no longer active
-- (issue 27): a recorded no-op with reason 'cancelled', not a missed
-- window. Replacing the check reads every row once, under the lock ALTER
-- TABLE takes: seconds for ten million rows.
ALTER TABLE notice_ledger
    DROP CONSTRAINT notice_ledger_state_check,
    ADD CONSTRAINT notice_ledger_state_check
        CHECK (state IN ('claimed', 'sent', 'retry', 'failed', 'missed', 'cancelled'));

-- +goose Down
ALTER TABLE notice_ledger
    DROP CONSTRAINT notice_ledger_state_check,
    ADD CONSTRAINT notice_ledger_state_check
        CHECK (state IN ('claimed', 'sent', 'retry', 'failed', 'missed'));
