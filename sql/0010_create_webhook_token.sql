-- +goose Up
-- Replay tokens of signed webhooks (issue 26): scan receive records the
-- token of each verified Mailgun request in the same transaction that
-- applies its events, so that every replica refuses a token it has seen
-- (the unique key), and a request whose events are not committed leaves
-- no token behind. digest is the SHA-256 of the request body: a retry of
-- the very same request is told apart from the token reused on another
-- body. signed_at is the instant the signature names; a token whose
-- signature is older than the receiver's age limit is refused whatever
-- this table holds, so rows older than that are pruned as requests arrive.
CREATE TABLE webhook_token (
    provider  text COLLATE "C" NOT NULL,
    token     text COLLATE "C" NOT NULL,
    digest    bytea       NOT NULL,
    signed_at timestamptz NOT NULL,
    seen_at   timestamptz NOT NULL,
    PRIMARY KEY (provider, token)
);

CREATE INDEX webhook_token_signed_at ON webhook_token (signed_at);

-- +goose Down
DROP TABLE webhook_token;
