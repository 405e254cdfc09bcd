-- +goose Up
-- Why a notice went out when it did (issue 27).
--
-- Four nullable columns without a default: a catalog change only, instant
-- on the partitioned table whatever its size.
--  - rule: the text of the window rule the notice's deadline used ("72h..24h
--    before renews_at", or a due: rule such as "09:00 on the 3rd working day
--    before renews_at, calendar DE, weekend sat+sun; closes 24h before").
--  - time_zone: the IANA zone that rule was evaluated in (the recipient's,
--    else default_time_zone).
--  - first_claimed_at: when the first attempt was claimed; a re-claim sets
--    claimed_at anew and keeps this.
--  - reason: why a row ended as it did when its state alone does not say:
--    'cancelled' for a retry row whose subscription was no longer active.
-- Rows written before this migration have NULL in each.
ALTER TABLE notice_ledger
    ADD COLUMN rule text,
    ADD COLUMN time_zone text,
    ADD COLUMN first_claimed_at timestamptz,
    ADD COLUMN reason text;

-- +goose Down
ALTER TABLE notice_ledger
    DROP COLUMN rule,
    DROP COLUMN time_zone,
    DROP COLUMN first_claimed_at,
    DROP COLUMN reason;
