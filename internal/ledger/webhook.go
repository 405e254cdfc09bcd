package ledger

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Replay tokens of signed webhooks (sql/0010): what scan receive records,
// in the transaction that applies a request's events, so that a token is
// taken once across every replica.

// TokenSeen is what recording a replay token found.
type TokenSeen int

// The outcomes of TokenRecord.
const (
	TokenNew    TokenSeen = iota // first seen: recorded in tx
	TokenReplay                  // seen before with the same body digest: a retry of a committed request
	TokenReused                  // seen before with another body: refused
)

// TokenRecord records provider's token with the request body's digest and
// the instant its signature names, in tx. A token already recorded (by
// this or another replica, committed) is not recorded again: the result
// says whether the earlier request had the same body. A concurrent
// transaction holding the same token makes this one wait for its end, as
// the unique key does. Rows whose signature is older than
// expireBefore are removed first (a token that old is refused by its
// age), a bounded number per call.
func TokenRecord(ctx context.Context, tx *sqlx.Tx, provider, token string, digest []byte, signedAt, now, expireBefore time.Time) (TokenSeen, error) {
	if _, err := tx.ExecContext(ctx, webhookTokenPrune, provider, expireBefore); err != nil {
		return 0, fmt.Errorf("prune webhook tokens: %w", err)
	}
	res, err := tx.ExecContext(ctx, webhookTokenInsert, provider, token, digest, signedAt, now)
	if err != nil {
		return 0, fmt.Errorf("record webhook token: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return TokenNew, nil
	}
	var seen []byte
	if err := tx.GetContext(ctx, &seen, webhookTokenDigest, provider, token); err != nil {
		return 0, fmt.Errorf("read webhook token: %w", err)
	}
	if bytes.Equal(seen, digest) {
		return TokenReplay, nil
	}
	return TokenReused, nil
}
