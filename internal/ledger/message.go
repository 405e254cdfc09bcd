package ledger

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jmoiron/sqlx"
)

// Proof of notice (issue 37): the message each attempt handed to the
// provider is kept, DEFLATE-compressed (RFC 1951, best compression, no
// dictionary), in notice_message, written by RecordOutcomes in the
// statement that records the outcome, read by MessageOf and
// MessageSample, removed by Prune with its period. sql/0023 says why the
// message and not the inputs of a re-render.

// ErrNoMessage: no message is kept for that attempt (none was handed
// over, it was sent before messages were kept, or its period was pruned).
var ErrNoMessage = errors.New("no message kept for this attempt")

// DigestError: the kept message does not hash to the digest the ledger
// recorded at send time. It is never "close enough": the proof refuses it.
type DigestError struct {
	Key     string // the notice's key
	Attempt int
	Want    []byte // the ledger's digest
	Got     []byte // the rebuilt message's
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("notice %s attempt %d: the kept message does not match the digest recorded at send time (recorded %x, rebuilt %x)",
		e.Key[:min(len(e.Key), 12)], e.Attempt, e.Want, e.Got)
}

// CompressMessage returns msg as notice_message keeps it.
func CompressMessage(msg []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, flate.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(msg); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// InflateMessage returns the message notice_message's body holds.
func InflateMessage(body []byte) ([]byte, error) {
	out, err := io.ReadAll(flate.NewReader(bytes.NewReader(body)))
	if err != nil {
		return nil, fmt.Errorf("inflate kept message: %w", err)
	}
	return out, nil
}

// compressMessages compresses each outcome's Message (nil when none).
func compressMessages(outs []Outcome) ([][]byte, error) {
	bodies := make([][]byte, len(outs))
	for i, o := range outs {
		if len(o.Message) == 0 {
			continue
		}
		b, err := CompressMessage(o.Message)
		if err != nil {
			return nil, fmt.Errorf("compress message: %w", err)
		}
		bodies[i] = b
	}
	return bodies, nil
}

// verifyMessage inflates body and checks it against want (the ledger's
// digest): a *DigestError when they differ.
func verifyMessage(key string, attempt int, want, body []byte) ([]byte, error) {
	msg, err := InflateMessage(body)
	if err != nil {
		return nil, &DigestError{Key: key, Attempt: attempt, Want: want}
	}
	if got := sha256.Sum256(msg); !bytes.Equal(got[:], want) {
		return nil, &DigestError{Key: key, Attempt: attempt, Want: want, Got: got[:]}
	}
	return msg, nil
}

// MessageOf returns the exact message r's current attempt handed to the
// provider, rebuilt from what notice_message keeps and verified against
// r's digest: ErrNoMessage when none is kept, a *DigestError when the
// rebuilt bytes do not hash to it.
func MessageOf(ctx context.Context, db sqlx.QueryerContext, r Row) ([]byte, error) {
	if len(r.MessageSHA256) == 0 {
		return nil, ErrNoMessage
	}
	var body []byte
	err := sqlx.GetContext(ctx, db, &body, noticeMessageGet, r.Period(), r.NoticeKey, r.Attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoMessage
	}
	if err != nil {
		return nil, fmt.Errorf("read kept message: %w", err)
	}
	return verifyMessage(r.NoticeKey, r.Attempts, r.MessageSHA256, body)
}

// MessageCheck is what MessageSample found.
type MessageCheck struct {
	Checked    int      `json:"checked"`    // rows with a digest looked at
	Verified   int      `json:"verified"`   // rebuilt to their digest
	Mismatched []string `json:"mismatched"` // key prefixes whose kept message does not
	Missing    int      `json:"missing"`    // rows with a digest and no kept message
	Bytes      int64    `json:"stored_bytes"`
}

// MessageSample rebuilds the kept messages of at most n rows with a
// digest, chosen at random (n <= 0: every such row), of the periods in
// [from, to) (zero: unbounded), and checks each against its digest.
func MessageSample(ctx context.Context, db sqlx.QueryerContext, n int, from, to time.Time) (MessageCheck, error) {
	var limit, lo, hi any
	if n > 0 {
		limit = n
	}
	if !from.IsZero() {
		lo = from.Format(dateLayout)
	}
	if !to.IsZero() {
		hi = to.Format(dateLayout)
	}
	rows, err := db.QueryxContext(ctx, noticeMessageSample, limit, lo, hi)
	if err != nil {
		return MessageCheck{}, fmt.Errorf("sample kept messages: %w", err)
	}
	defer rows.Close()
	res := MessageCheck{Mismatched: []string{}}
	for rows.Next() {
		var (
			period       time.Time
			key          string
			attempt      int
			digest, body []byte
		)
		if err := rows.Scan(&period, &key, &attempt, &digest, &body); err != nil {
			return res, fmt.Errorf("sample kept messages: %w", err)
		}
		res.Checked++
		res.Bytes += int64(len(body))
		switch _, err := verifyMessage(key, attempt, digest, body); {
		case body == nil:
			res.Missing++
		case err != nil:
			res.Mismatched = append(res.Mismatched, key[:min(len(key), 12)])
		default:
			res.Verified++
		}
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("sample kept messages: %w", err)
	}
	return res, nil
}
