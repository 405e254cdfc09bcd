-- +goose Up
-- Channels (issue 30). A notice goes by email or by sms; each channel's
-- notice is a notice of its own (its own key: the sms key's material ends
-- in "|sms"), so the business tuple's unique index gains the channel. The
-- new index is built before the old one is dropped, so no instant is
-- without one; building it reads every month once (README: migrating).
--  - channel: 'email' (every existing row) or 'sms'. A constant default:
--    a catalog change, no month is rewritten.
--  - address_hmac: the recipient's suppression digest (notice_suppression),
--    written with the claim, so that a hard bounce or complaint settled
--    later can put that address on the list inside Settle's transaction
--    without the ledger ever holding the address or the secret.
ALTER TABLE notice_ledger
    ADD COLUMN channel text NOT NULL DEFAULT 'email',
    ADD COLUMN address_hmac bytea;
ALTER TABLE notice_ledger
    ADD CONSTRAINT notice_ledger_channel_check CHECK (channel IN ('email', 'sms'));

CREATE UNIQUE INDEX notice_ledger_business_channel_key
    ON notice_ledger (subscription_id, kind, period_start, revision, channel);
DROP INDEX notice_ledger_business_key;

-- +goose Down
CREATE UNIQUE INDEX notice_ledger_business_key
    ON notice_ledger (subscription_id, kind, period_start, revision);
DROP INDEX notice_ledger_business_channel_key;
ALTER TABLE notice_ledger
    DROP CONSTRAINT notice_ledger_channel_check,
    DROP COLUMN address_hmac,
    DROP COLUMN channel;
