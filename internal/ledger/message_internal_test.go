package ledger

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// sampleMessages are messages like the pass hands over: the dictionary's
// own emails and sms with another customer's name, token and boundary
// (what differs between two notices of one template).
func sampleMessages(t testing.TB) (dict messageDict, msgs [][]byte) {
	t.Helper()
	d, err := MessageDict()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range bytes.Split(d.Body, []byte("From: \"")) {
		m := bytes.ReplaceAll(append([]byte("From: \""), p...), []byte("24e038e7221b3b34faf27608d3761340"), []byte("9f1c2b7a55d0e4c3b8a6f1e2d3c4b5a6"))
		m = bytes.ReplaceAll(m, []byte("Alex Example"), []byte("Jordan Q. Public"))
		msgs = append(msgs, bytes.ReplaceAll(m, []byte("ae3616eaf354ed9c26a0a46a6d9be39c"), []byte("0123456789abcdef0123456789abcdef")))
	}
	if len(msgs) < 4 {
		t.Fatalf("%d sample messages from the dictionary, want at least 4", len(msgs))
	}
	return d, msgs
}

// What the pass compresses (one S2 dictionary, prepared once, shared by
// every message and batch) decompresses with a decoder
// given the dictionary alone to the exact bytes, and the dictionary pays:
// each email is kept in far less than a third of its size.
func TestCompressedMessagesRebuildWithTheDictionaryAlone(t *testing.T) {
	dict, msgs := sampleMessages(t)
	var outs []Outcome
	for range 3 { // three batches: the pooled writers are reset between messages
		for _, m := range msgs {
			outs = append(outs, Outcome{Message: m})
		}
		outs = append(outs, Outcome{}) // nothing handed over: nothing kept
	}
	bodies, err := compressMessages(outs)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		if o.Message == nil {
			if bodies[i] != nil {
				t.Fatalf("outcome %d: kept %d bytes for no message", i, len(bodies[i]))
			}
			continue
		}
		sum := sha256.Sum256(o.Message)
		got, err := verifyMessage(fmt.Sprintf("%064x", i), 1, sum[:], bodies[i], dict)
		if err != nil || !bytes.Equal(got, o.Message) {
			t.Fatalf("outcome %d: %v", i, err)
		}
		if len(o.Message) > 1000 && len(bodies[i])*3 > len(o.Message) {
			t.Fatalf("outcome %d: %d bytes kept for a %d-byte message: the dictionary was not used", i, len(bodies[i]), len(o.Message))
		}
	}
}

// A message the send workers compressed (KeepMessage, Outcome.Kept) is
// kept as is, not compressed again, and rebuilds to its digest.
func TestKeptMessageTakenAsIs(t *testing.T) {
	dict, msgs := sampleMessages(t)
	kept, err := KeepMessage(msgs[0])
	if err != nil || len(kept) == 0 {
		t.Fatalf("KeepMessage: %d bytes, %v", len(kept), err)
	}
	sum := sha256.Sum256(msgs[0])
	if got, err := verifyMessage(fmt.Sprintf("%064x", 1), 1, sum[:], kept, dict); err != nil || !bytes.Equal(got, msgs[0]) {
		t.Fatalf("KeepMessage's does not rebuild: %v", err)
	}
	forged := []byte("not what KeepMessage made")
	bodies, err := compressMessages([]Outcome{{Message: msgs[0], Kept: forged}, {Message: msgs[1]}})
	if err != nil || !bytes.Equal(bodies[0], forged) || len(bodies[1]) == 0 {
		t.Fatalf("bodies = %q, %v: want Kept as is and the other compressed", bodies, err)
	}
}

// BenchmarkCompressMessage is one message compressed as the pass does
// (against the dictionary prepared once, into a pooled buffer, copied out
// at its size); B/msg is the kept size.
func BenchmarkCompressMessage(b *testing.B) {
	_, msgs := sampleMessages(b)
	outs := make([]Outcome, 1)
	kept := 0
	for i := 0; b.Loop(); i++ {
		outs[0].Message = msgs[i%len(msgs)]
		bodies, err := compressMessages(outs)
		if err != nil {
			b.Fatal(err)
		}
		kept += len(bodies[0])
	}
	b.ReportMetric(float64(kept)/float64(b.N), "B/msg")
}

// The messages kept before sql/0037, DEFLATE streams against dictionary 1
// (the same bytes), still rebuild to their digest, and a wrong one is
// still a mismatch; so is a zstd frame that does not decode.
func TestDeflateMessagesOfDictionary1StayReadable(t *testing.T) {
	dict, msgs := sampleMessages(t)
	var b bytes.Buffer
	w, err := flate.NewWriterDict(&b, 2, dict.Body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(msgs[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	old := messageDict{ID: 1, Format: formatDeflate, Body: dict.Body}
	sum := sha256.Sum256(msgs[0])
	if got, err := verifyMessage(fmt.Sprintf("%064x", 1), 1, sum[:], b.Bytes(), old); err != nil || !bytes.Equal(got, msgs[0]) {
		t.Fatalf("a DEFLATE message of dictionary 1 does not rebuild: %v", err)
	}
	other := sha256.Sum256(msgs[1])
	var de *DigestError
	if _, err := verifyMessage(fmt.Sprintf("%064x", 1), 1, other[:], b.Bytes(), old); !errors.As(err, &de) {
		t.Fatalf("a wrong digest: %v, want a DigestError", err)
	}
	if _, err := verifyMessage(fmt.Sprintf("%064x", 1), 1, sum[:], b.Bytes(), dict); !errors.As(err, &de) {
		t.Fatalf("a DEFLATE stream read as s2: %v, want a DigestError", err)
	}
}

// The messages kept before sql/0040, zstd frames against dictionary 2
// (the same bytes, raw), still rebuild to their digest; a zstd frame read
// as the current format is a mismatch, and so is an S2 block claiming
// more than maxMessage (refused before anything is allocated for it).
func TestZstdMessagesOfDictionary2StayReadable(t *testing.T) {
	dict, msgs := sampleMessages(t)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false), zstd.WithEncoderDictRaw(2, dict.Body))
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(msgs[0], nil)
	enc.Close()
	old := messageDict{ID: 2, Format: formatZstd, Body: dict.Body}
	sum := sha256.Sum256(msgs[0])
	if got, err := verifyMessage(fmt.Sprintf("%064x", 1), 1, sum[:], frame, old); err != nil || !bytes.Equal(got, msgs[0]) {
		t.Fatalf("a zstd message of dictionary 2 does not rebuild: %v", err)
	}
	var de *DigestError
	if _, err := verifyMessage(fmt.Sprintf("%064x", 1), 1, sum[:], frame, dict); !errors.As(err, &de) {
		t.Fatalf("a zstd frame read as s2: %v, want a DigestError", err)
	}
	huge := binary.AppendUvarint(nil, maxMessage+1)
	if _, err := inflate(append(huge, 0), dict); err == nil || !strings.Contains(err.Error(), "claimed") {
		t.Fatalf("an S2 block claiming %d bytes: %v, want refused", maxMessage+1, err)
	}
}
