-- +goose Up
-- Reached, not merely accepted (issue 36): what the provider's evidence
-- says of a notice's delivery, beside its state (state keeps its meaning:
-- sent = accepted).
--  - delivery_kind: '' (no evidence yet), or the event kind
--    (ledger.EventKind) of the evidence that decided the delivery of
--    attempt delivery_attempt: 'delivered', or a kind that proves it
--    undeliverable ('bounce_hard', 'bounce_soft', 'blocked', 'dropped',
--    'not_sent'). ledger.DeliveryOf / DeliverySQL turn it into the
--    notice's delivery; scan undelivered names the kind as its reason.
--  - delivery_attempt: the attempt that evidence is about; it counts only
--    while that is the row's current attempt, so a re-claim (scan resolve
--    --retry) needs no write to forget it.
-- Constant defaults: a catalog change, no month is rewritten.
ALTER TABLE notice_ledger
    ADD COLUMN delivery_kind text NOT NULL DEFAULT '',
    ADD COLUMN delivery_attempt int NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE notice_ledger
    DROP COLUMN delivery_attempt,
    DROP COLUMN delivery_kind;
