package ledger

// The statements on webhook_token (sql/0010), apart from queries.go so
// that the receiver's statements merge without touching the ledger's.

// webhookTokenInsert records one replay token; a token already there is
// skipped by ON CONFLICT DO NOTHING (zero rows affected), waiting for a
// concurrent transaction that holds it to end.
//
// $1 provider, $2 token, $3 body digest, $4 signed_at, $5 seen_at.
const webhookTokenInsert = `
INSERT INTO webhook_token (provider, token, digest, signed_at, seen_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING`

// webhookTokenDigest reads the body digest a recorded token was seen with.
//
// $1 provider, $2 token.
const webhookTokenDigest = `
SELECT digest FROM webhook_token WHERE provider = $1 AND token = $2`

// webhookTokenPrune removes up to 1000 tokens of a provider whose
// signature is older than $2: the receiver refuses such a token by its
// age alone. Bounded so that one request never carries a long delete;
// SKIP LOCKED so that replicas pruning at once never wait on each other.
//
// $1 provider, $2 oldest signed_at still kept.
const webhookTokenPrune = `
DELETE FROM webhook_token
WHERE (provider, token) IN (
    SELECT provider, token FROM webhook_token
    WHERE provider = $1 AND signed_at < $2
    ORDER BY signed_at
    LIMIT 1000
    FOR UPDATE SKIP LOCKED)`
