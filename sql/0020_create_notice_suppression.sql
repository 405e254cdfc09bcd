-- +goose Up
-- The suppression list (issue 30): addresses and numbers that a channel
-- must not send to. No address is kept in the clear: address_hmac is
-- HMAC-SHA256 under a key derived from NOTICE_KEY_SECRET (package notice,
-- AddressHasher) of the channel and the normalized address (email: lower
-- case; sms: E.164). One row per (channel, address); a second report of
-- the same address keeps the first row (its reason, source and time).
--  - reason: why (an operator's text, "hard bounce", "complaint", a
--    provider's list name); never the address.
--  - source: operator, import, evidence (a hard bounce or complaint
--    settled by ledger.Settle), provider (the provider's own list:
--    SendGrid, Mailgun suppress-*, Postmark Inactive, Twilio 21610).
--  - notice_key: the notice whose evidence added it, if any.
CREATE TABLE notice_suppression (
    channel      text        NOT NULL,
    address_hmac bytea       NOT NULL,
    reason       text        NOT NULL,
    source       text        NOT NULL,
    notice_key   text COLLATE "C",
    created_at   timestamptz NOT NULL,
    CONSTRAINT notice_suppression_pkey PRIMARY KEY (channel, address_hmac),
    CONSTRAINT notice_suppression_channel_check CHECK (channel IN ('email', 'sms')),
    CONSTRAINT notice_suppression_hmac_check CHECK (length(address_hmac) = 32)
);

-- +goose Down
DROP TABLE notice_suppression;
