package ledger

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// Earlier attempts (sql/0036, sql/0041): when a retry is re-claimed, the
// ledger's trigger copies the message the earlier attempt handed over
// into notice_message under its attempt, with the digest the ledger
// recorded for it at send time (digest; NULL for a message kept before
// sql/0041, which nothing can check). EarlierMessages reads and verifies
// them for the proof; MessageSample counts them for `scan proof --verify`.

// Unverifiable is what the proof says of an earlier attempt kept with no
// digest: it is never reported as verified.
const Unverifiable = "unverifiable (kept before 0041)"

// KeptAttempt is an earlier attempt's kept message.
type KeptAttempt struct {
	Attempt int
	// Digest is the one the ledger recorded when the attempt handed the
	// message over, which Message hashes to; nil when the message was
	// kept before sql/0041 (Message is then as stored, unchecked).
	Digest  []byte
	Message []byte
}

// Verified tells whether a's message was checked against its digest.
func (a KeptAttempt) Verified() bool { return a.Digest != nil }

// EarlierMessages returns the messages kept for r's attempts before its
// current one, by attempt, each rebuilt and, where a digest was kept with
// it, verified: a *DigestError naming the notice and the attempt when one
// does not hash to its digest, an error naming them when one cannot be
// read back.
func EarlierMessages(ctx context.Context, db sqlx.QueryerContext, r Row) ([]KeptAttempt, error) {
	var kept []struct {
		Attempt int    `db:"attempt"`
		Digest  []byte `db:"digest"`
		Body    []byte `db:"body"`
		DictID  int    `db:"dict_id"`
		Format  string `db:"format"`
		Dict    []byte `db:"dict"`
	}
	if err := sqlx.SelectContext(ctx, db, &kept, noticeMessageEarlier, r.Period(), r.NoticeKey, r.Attempts); err != nil {
		return nil, fmt.Errorf("read earlier attempts' messages: %w", err)
	}
	out := make([]KeptAttempt, 0, len(kept))
	for _, k := range kept {
		d := messageDict{ID: k.DictID, Format: k.Format, Body: k.Dict}
		a := KeptAttempt{Attempt: k.Attempt, Digest: k.Digest}
		var err error
		if a.Verified() {
			a.Message, err = verifyMessage(r.NoticeKey, k.Attempt, k.Digest, k.Body, d)
		} else if a.Message, err = inflate(k.Body, d); err != nil {
			err = fmt.Errorf("notice %s attempt %d: %w", r.NoticeKey[:min(len(r.NoticeKey), 12)], k.Attempt, err)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
