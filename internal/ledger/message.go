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
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	schema "scan/sql"
)

// Proof of notice (issue 37): the message each attempt handed to the
// provider is kept compressed, an S2 block (github.com/klauspost/compress/
// s2, Dict.Encode) against the raw dictionary of sql/0024 under id 3
// (sql/0040; MessageDict), in the ledger row itself (sql/0036), written by
// RecordOutcomes in the statement that records the outcome, read by
// MessageOf and MessageSample (which take the dictionary and its format
// from the database, not from this code), removed by Prune with its
// period. Earlier attempts' messages, and those recorded before sql/0036,
// are in notice_message; those recorded before sql/0040 are zstd frames
// (RFC 8878) against dictionary 2, and before sql/0037 DEFLATE streams
// (RFC 1951) against dictionary 1, inflated by compress/flate. sql/0023
// says why the message and not the inputs of a re-render.

// Formats of notice_message_dict (sql/0037): how the streams compressed
// against a dictionary are written.
const (
	formatDeflate = "deflate" // RFC 1951, the dictionary as preset history
	formatZstd    = "zstd"    // RFC 8878 frame, the dictionary raw, by its id
	formatS2      = "s2"      // S2 block, the dictionary raw, first repeat at 0
)

// messageDictFile is the migration that holds the dictionary's bytes, and
// messageDictID the id messages are compressed under now (sql/0040 copied
// those bytes under it, format s2).
const (
	messageDictFile = "0024_insert_message_dictionary.sql"
	messageDictID   = 3
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
	return messageDict{ID: messageDictID, Format: formatS2, Body: body}, nil
})

// messageDict is one preset dictionary of notice_message_dict.
type messageDict struct {
	ID     int
	Format string // formatDeflate, formatZstd or formatS2
	Body   []byte
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

// CompressMessage returns msg compressed as the ledger keeps it now, an
// S2 block against dict (MessageDict's bytes; nil for none).
func CompressMessage(msg, dict []byte) ([]byte, error) {
	if dict == nil {
		return s2.Encode(nil, msg), nil
	}
	d, err := newS2Dict(dict)
	if err != nil {
		return nil, err
	}
	return d.Encode(nil, msg), nil
}

// newS2Dict returns the S2 dictionary of raw bytes dict as format s2 reads
// it (sql/0040): the first repeat offset at the dictionary's start.
func newS2Dict(dict []byte) (*s2.Dict, error) {
	d := s2.MakeDictManual(dict, 0)
	if d == nil {
		return nil, fmt.Errorf("s2 dictionary of %d bytes: want %d to %d", len(dict), s2.MinDictSize, s2.MaxDictSize)
	}
	return d, nil
}

// encoder is the current dictionary (MessageDict) prepared for S2 once;
// its Encode is safe for concurrent use. zstd (dictionary 2) restored a
// 256 KB match table from its prepared dictionary before every message.
var encoder = sync.OnceValues(func() (*s2.Dict, error) {
	dict, err := MessageDict()
	if err != nil {
		return nil, err
	}
	return newS2Dict(dict.Body)
})

// scratch holds the buffers messages are compressed into (S2 wants room
// for the worst case, several times the kept size): the kept bytes are
// then copied out at their own size, so that the outcomes waiting for
// their batch hold no slack.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// keep returns msg compressed against d, in a slice of its own size.
func keep(d *s2.Dict, msg []byte) []byte {
	buf := scratch.Get().(*[]byte)
	out := d.Encode((*buf)[:0], msg)
	kept := bytes.Clone(out)
	*buf = out
	scratch.Put(buf)
	return kept
}

// KeepMessage returns msg compressed as RecordOutcomes keeps it (against
// the current dictionary, MessageDict), for Outcome.Kept; nil, nil in a
// binary that keeps no messages (-tags noproof). Safe for concurrent use:
// the pass's send workers call it (send.DispatcherConfig.Keep).
func KeepMessage(msg []byte) ([]byte, error) {
	if !keepMessages || len(msg) == 0 {
		return nil, nil
	}
	d, err := encoder()
	if err != nil {
		return nil, err
	}
	return keep(d, msg), nil
}

// inflate returns the message body holds, compressed against dictionary
// d as d's format says (an empty format: DEFLATE, as before sql/0037).
func inflate(body []byte, d messageDict) ([]byte, error) {
	switch d.Format {
	case formatS2:
		return inflateS2(body, d)
	case formatZstd:
	default:
		out, err := io.ReadAll(flate.NewReaderDict(bytes.NewReader(body), d.Body))
		if err != nil {
			return nil, fmt.Errorf("inflate kept message: %w", err)
		}
		return out, nil
	}
	dec, err := decoderFor(d)
	if err != nil {
		return nil, err
	}
	out, err := dec.DecodeAll(body, nil)
	if err != nil {
		return nil, fmt.Errorf("decompress kept message: %w", err)
	}
	return out, nil
}

// decoders holds a zstd decoder per dictionary id (*zstd.Decoder): the
// dictionaries are immutable, and preparing one costs more than a message.
var decoders sync.Map

// decoderFor returns the zstd decoder of dictionary d.
func decoderFor(d messageDict) (*zstd.Decoder, error) {
	if dec, ok := decoders.Load(d.ID); ok {
		return dec.(*zstd.Decoder), nil
	}
	opts := []zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxMessage)}
	if len(d.Body) > 0 {
		opts = append(opts, zstd.WithDecoderDictRaw(uint32(d.ID), d.Body))
	}
	dec, err := zstd.NewReader(nil, opts...)
	if err != nil {
		return nil, fmt.Errorf("kept message dictionary %d: %w", d.ID, err)
	}
	got, _ := decoders.LoadOrStore(d.ID, dec)
	return got.(*zstd.Decoder), nil
}

// s2Dicts holds the S2 dictionary per dictionary id (*s2.Dict), as
// decoders does zstd's.
var s2Dicts sync.Map

// inflateS2 returns the message of S2 block body, against dictionary d.
func inflateS2(body []byte, d messageDict) ([]byte, error) {
	n, err := s2.DecodedLen(body)
	if err != nil || n > maxMessage {
		return nil, fmt.Errorf("decompress kept message: %d bytes claimed, %v", n, err)
	}
	if len(d.Body) == 0 {
		out, err := s2.Decode(nil, body)
		if err != nil {
			return nil, fmt.Errorf("decompress kept message: %w", err)
		}
		return out, nil
	}
	dict, ok := s2Dicts.Load(d.ID)
	if !ok {
		nd, err := newS2Dict(d.Body)
		if err != nil {
			return nil, fmt.Errorf("kept message dictionary %d: %w", d.ID, err)
		}
		dict, _ = s2Dicts.LoadOrStore(d.ID, nd)
	}
	out, err := dict.(*s2.Dict).Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("decompress kept message: %w", err)
	}
	return out, nil
}

// maxMessage bounds what a kept message may decompress to: a stored frame
// claiming more is refused (a mismatch), not allocated.
const maxMessage = 64 << 20

// compressMessages compresses each outcome's Message (nil when none)
// against the current dictionary, on up to GOMAXPROCS goroutines: the
// pass's recorder waits for it. An outcome's Kept (KeepMessage's, against
// the same dictionary) is taken as is.
func compressMessages(outs []Outcome) ([][]byte, error) {
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
	if need == 0 {
		return bodies, nil
	}
	d, err := encoder()
	if err != nil {
		return nil, fmt.Errorf("compress message: %w", err)
	}
	workers := min(runtime.GOMAXPROCS(0), (need+compressChunk-1)/compressChunk)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(outs); i += workers {
				if len(outs[i].Message) > 0 && bodies[i] == nil {
					bodies[i] = keep(d, outs[i].Message)
				}
			}
		}()
	}
	wg.Wait()
	return bodies, nil
}

// compressChunk is the fewest messages worth a goroutine of their own.
const compressChunk = 16

// verifyMessage decompresses body (against d) and checks it against want
// (the ledger's digest): a *DigestError when they differ.
func verifyMessage(key string, attempt int, want, body []byte, d messageDict) ([]byte, error) {
	msg, err := inflate(body, d)
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
		Body   []byte `db:"body"`
		DictID int    `db:"dict_id"`
		Format string `db:"format"`
		Dict   []byte `db:"dict"`
	}
	err := sqlx.GetContext(ctx, db, &m, noticeMessageGet, r.Period(), r.NoticeKey, r.Attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoMessage
	}
	if err != nil {
		return nil, fmt.Errorf("read kept message: %w", err)
	}
	return verifyMessage(r.NoticeKey, r.Attempts, r.MessageSHA256, m.Body, messageDict{ID: m.DictID, Format: m.Format, Body: m.Dict})
}

// MessageCheck is what MessageSample found. An attempt is checked when
// the ledger recorded a digest for it: the current attempt's in the
// ledger row, an earlier attempt's in notice_message (sql/0041).
type MessageCheck struct {
	Checked    int      `json:"checked"`    // attempts with a digest looked at, current and earlier
	Verified   int      `json:"verified"`   // rebuilt to their digest
	Mismatched []string `json:"mismatched"` // key prefixes whose kept message does not ("<prefix> attempt N" for an earlier attempt)
	Missing    int      `json:"missing"`    // current attempts with a digest and no kept message
	// Earlier is how many of Checked are earlier attempts; Unverifiable
	// counts the earlier attempts kept before sql/0041, with no digest to
	// check them against (in neither Checked nor Verified).
	Earlier      int   `json:"earlier_checked"`
	Unverifiable int   `json:"unverifiable_kept_before_0041"`
	Bytes        int64 `json:"stored_bytes"`
}

// MessageSample rebuilds the kept messages of at most n ledger rows with
// a digest or more than one attempt, chosen at random (n <= 0: every such
// row), of the periods in [from, to) (zero: unbounded), and checks each
// attempt's against its digest: the current attempt's and every earlier
// one's that notice_message keeps.
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
		var a sampledAttempt
		if err := rows.Scan(&a.period, &a.key, &a.attempt, &a.digest, &a.current, &a.body, &a.dict.ID, &a.dict.Format, &a.dict.Body); err != nil {
			return res, fmt.Errorf("sample kept messages: %w", err)
		}
		res.add(a)
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("sample kept messages: %w", err)
	}
	return res, nil
}

// sampledAttempt is one attempt noticeMessageSample returns.
type sampledAttempt struct {
	period       time.Time
	key          string
	attempt      int
	digest, body []byte
	current      bool
	dict         messageDict
}

// add checks a and counts it.
func (res *MessageCheck) add(a sampledAttempt) {
	if !a.current && a.digest == nil {
		res.Unverifiable++
		return
	}
	res.Checked++
	res.Bytes += int64(len(a.body))
	name := a.key[:min(len(a.key), 12)]
	if !a.current {
		res.Earlier++
		name = fmt.Sprintf("%s attempt %d", name, a.attempt)
	}
	switch _, err := verifyMessage(a.key, a.attempt, a.digest, a.body, a.dict); {
	case a.body == nil:
		res.Missing++
	case err != nil:
		res.Mismatched = append(res.Mismatched, name)
	default:
		res.Verified++
	}
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
