-- +goose Up
-- Provider events name the provider's own message id (SES mail.messageId,
-- Postmark MessageID, SendGrid sg_message_id); reconcile looks claims up by
-- it when an event carries no notice key.
CREATE INDEX IF NOT EXISTS notice_ledger_provider_id
    ON notice_ledger (provider_id) WHERE provider_id IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS notice_ledger_provider_id;
