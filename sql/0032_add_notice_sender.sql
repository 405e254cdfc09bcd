-- +goose Up
-- Provider failover (issue 36): SCAN_SENDER may name an ordered list of
-- senders ("ses,smtp"); sender records which of them the current attempt
-- went through ("ses", "smtp", "http", "outbox", "twilio"), the single
-- sender's name when SCAN_SENDER names one. It is written with the
-- attempt's outcome, in the same statement (ledger.RecordOutcomes), and
-- NULL for rows recorded before it was kept and for claims with no outcome
-- yet. A nullable column with no default: a catalog change, no month is
-- rewritten.
ALTER TABLE notice_ledger ADD COLUMN sender text;

-- +goose Down
ALTER TABLE notice_ledger DROP COLUMN sender;
