package ledger

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	kflate "github.com/klauspost/compress/flate"

	schema "scan/sql"
)

// Proof of notice (issue 37): the message each attempt handed to the
// provider is kept, DEFLATE-compressed (RFC 1951, level messageLevel)
// against the preset dictionary of sql/0024 (MessageDict), in
// notice_message, written by RecordOutcomes in the statement that records
// the outcome, read by MessageOf and MessageSample (which take the
// dictionary from the database, not from this code), removed by Prune
// with its period. sql/0023 says why the message and not the inputs of a
// re-render.

// messageLevel is the DEFLATE level messages are compressed at, by
// github.com/klauspost/compress/flate: its level 2 is a single-table
// greedy encoder whose reset is an offset bump, where compress/flate's
// clears 640 KB of hash chains for every message before priming the
// dictionary; same stream size, about a third of the CPU
// (BenchmarkCompressMessage, docs/proof.md). The output is plain DEFLATE
// (RFC 1951): compress/flate inflates it (InflateMessage), and any level
// inflates alike.
const messageLevel = 2

// messageDictFile is the migration that holds the dictionary messages
// are compressed against now, and messageDictID its id there.
const (
	messageDictFile = "0024_insert_message_dictionary.sql"
	messageDictID   = 1
)

// MessageDict returns the id and bytes of the dictionary messages are
// compressed against, read from the migration that writes them to the
// database (one source for both). Safe for concurrent use.
var MessageDict = sync.OnceValues(func() (messageDict, error) {
	b, err := fs.ReadFile(schema.Migrations, messageDictFile)
	if err != nil {
		return messageDict{}, fmt.Errorf("message dictionary: %w", err)
	}
	_, lit, ok := strings.Cut(string(b), "decode('")
	lit, _, ok2 := strings.Cut(lit, "'")
	if !ok || !ok2 {
		return messageDict{}, fmt.Errorf("message dictionary: no decode('...') literal in %s", messageDictFile)
	}
	body, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(lit), ""))
	if err != nil {
		return messageDict{}, fmt.Errorf("message dictionary: %w", err)
	}
	return messageDict{ID: messageDictID, Body: body}, nil
})

// messageDict is one preset dictionary of notice_message_dict.
type messageDict struct {
	ID   int
	Body []byte
}

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

// CompressMessage returns msg as notice_message keeps it, compressed
// against dict (MessageDict's bytes; nil for none).
func CompressMessage(msg, dict []byte) ([]byte, error) {
	w, err := kflate.NewWriterDict(io.Discard, messageLevel, dict)
	if err != nil {
		return nil, err
	}
	return compressWith(w, msg)
}

// compressWith compresses msg with w, reset (its level and dictionary
// kept): a new writer allocates and costs several times more.
func compressWith(w *kflate.Writer, msg []byte) ([]byte, error) {
	var b bytes.Buffer
	w.Reset(&b)
	if _, err := w.Write(msg); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// KeepMessage returns msg compressed as RecordOutcomes keeps it (against
// the current dictionary, MessageDict), for Outcome.Kept; nil, nil in a
// binary that keeps no messages (-tags noproof). Safe for concurrent use:
// the pass's send workers call it (send.DispatcherConfig.Keep).
func KeepMessage(msg []byte) ([]byte, error) {
	if !keepMessages || len(msg) == 0 {
		return nil, nil
	}
	dict, err := MessageDict()
	if err != nil {
		return nil, err
	}
	w, _ := writers.Get().(*kflate.Writer)
	if w == nil {
		if w, err = kflate.NewWriterDict(io.Discard, messageLevel, dict.Body); err != nil {
			return nil, err
		}
	}
	defer writers.Put(w)
	return compressWith(w, msg)
}

// writers are flate writers at messageLevel against the current
// dictionary (MessageDict), reused across batches.
var writers sync.Pool

// InflateMessage returns the message notice_message's body holds, given
// the dictionary it was compressed against (nil for none).
func InflateMessage(body, dict []byte) ([]byte, error) {
	out, err := io.ReadAll(flate.NewReaderDict(bytes.NewReader(body), dict))
	if err != nil {
		return nil, fmt.Errorf("inflate kept message: %w", err)
	}
	return out, nil
}

// compressMessages compresses each outcome's Message (nil when none)
// against dict, the current dictionary, on up to GOMAXPROCS goroutines:
// the pass's recorder waits for it, and priming the dictionary costs each
// message more than its own bytes. An outcome's Kept (KeepMessage's,
// compressed against the same dictionary) is taken as is.
func compressMessages(outs []Outcome, dict []byte) ([][]byte, error) {
	bodies := make([][]byte, len(outs))
	if !keepMessages {
		return bodies, nil
	}
	need := 0
	for i, o := range outs {
		switch {
		case len(o.Kept) > 0:
			bodies[i] = o.Kept
		case len(o.Message) > 0:
			need++
		}
	}
	workers := min(runtime.GOMAXPROCS(0), (need+compressChunk-1)/compressChunk)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, _ := writers.Get().(*kflate.Writer)
			if w == nil {
				if w, errs[g] = kflate.NewWriterDict(io.Discard, messageLevel, dict); errs[g] != nil {
					return
				}
			}
			defer writers.Put(w)
			for i := g; i < len(outs) && errs[g] == nil; i += workers {
				if len(outs[i].Message) > 0 && bodies[i] == nil {
					bodies[i], errs[g] = compressWith(w, outs[i].Message)
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("compress message: %w", err)
	}
	return bodies, nil
}

// compressChunk is the fewest messages worth a goroutine of their own.
const compressChunk = 16

// verifyMessage inflates body and checks it against want (the ledger's
// digest): a *DigestError when they differ.
func verifyMessage(key string, attempt int, want, body, dict []byte) ([]byte, error) {
	msg, err := InflateMessage(body, dict)
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
	var m struct {
		Body []byte `db:"body"`
		Dict []byte `db:"dict"`
	}
	err := sqlx.GetContext(ctx, db, &m, noticeMessageGet, r.Period(), r.NoticeKey, r.Attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoMessage
	}
	if err != nil {
		return nil, fmt.Errorf("read kept message: %w", err)
	}
	return verifyMessage(r.NoticeKey, r.Attempts, r.MessageSHA256, m.Body, m.Dict)
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
			period             time.Time
			key                string
			attempt            int
			digest, body, dict []byte
		)
		if err := rows.Scan(&period, &key, &attempt, &digest, &body, &dict); err != nil {
			return res, fmt.Errorf("sample kept messages: %w", err)
		}
		res.Checked++
		res.Bytes += int64(len(body))
		switch _, err := verifyMessage(key, attempt, digest, body, dict); {
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

// StoredDict returns dictionary id's bytes as the database holds them
// (ErrNoMessage when it holds none).
func StoredDict(ctx context.Context, db sqlx.QueryerContext, id int) ([]byte, error) {
	var b []byte
	err := sqlx.GetContext(ctx, db, &b, noticeMessageDict, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoMessage
	}
	return b, err
}
