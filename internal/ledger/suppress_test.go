package ledger_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

func digest(s string) []byte { d := sha256.Sum256([]byte(s)); return d[:] }

func TestSuppressionAddListRemoveMatch(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	n, err := ledger.SuppressionAdd(ctx, db, t0, []ledger.Suppression{
		{Channel: "email", Digest: digest("a"), Reason: "court order", Source: ledger.SuppressedByOperator},
		{Channel: "sms", Digest: digest("a"), Reason: "21610", Source: ledger.SuppressedByProvider},
		{Channel: "email", Digest: digest("a"), Reason: "again", Source: ledger.SuppressedByImport},
	})
	if err != nil || n != 2 {
		t.Fatalf("add: %d, %v", n, err)
	}
	list, err := ledger.SuppressionList(ctx, db, 10)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	for _, e := range list {
		if len(e.Digest) != 12 {
			t.Fatalf("digest printed whole: %+v", e)
		}
		if e.Channel == "email" && e.Reason != "court order" {
			t.Fatalf("first entry did not stand: %+v", e)
		}
	}
	m, err := ledger.SuppressionMatch(ctx, db, "email", [][]byte{digest("b"), digest("a"), nil})
	if err != nil || m[0] || !m[1] || m[2] {
		t.Fatalf("match: %v, %v", m, err)
	}
	ok, err := ledger.SuppressionRemove(ctx, db, "email", [][]byte{digest("a")})
	if err != nil || !ok {
		t.Fatalf("remove: %v, %v", ok, err)
	}
	m, _ = ledger.SuppressionMatch(ctx, db, "email", [][]byte{digest("a")})
	if m[0] {
		t.Fatal("still suppressed after remove")
	}
	c, err := ledger.SuppressionCount(ctx, db)
	if err != nil || c["sms"] != 1 || c["email"] != 0 {
		t.Fatalf("count: %v, %v", c, err)
	}
}

// Each channel's notice is its own row: the same business tuple claims
// once by email and once by sms, never twice by one channel.
func TestClaimPerChannel(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	c := claim(1, 0)
	c.AddressHMAC = digest("ann@example.com")
	if w, err := ledger.Insert(ctx, db, opt("r1"), []ledger.Claim{c}); err != nil || len(w) != 1 {
		t.Fatalf("email claim: %v, %v", w, err)
	}
	s := c
	s.Key = key(99)
	o := opt("r1")
	o.Channel = "sms"
	if w, err := ledger.Insert(ctx, db, o, []ledger.Claim{s}); err != nil || len(w) != 1 {
		t.Fatalf("sms claim: %v, %v", w, err)
	}
	s.Key = key(98) // another key (a rotated secret), same tuple and channel
	if w, err := ledger.Insert(ctx, db, o, []ledger.Claim{s}); err != nil || len(w) != 0 {
		t.Fatalf("second sms claim of one tuple: %v, %v", w, err)
	}
	if r := get(t, db, key(99)); r.Channel != "sms" || !bytes.Equal(r.AddressHMAC, c.AddressHMAC) {
		t.Fatalf("sms row: %+v", r)
	}
	if r := get(t, db, c.Key); r.Channel != "email" {
		t.Fatalf("email row: %+v", r)
	}
}

// A hard bounce settled by evidence puts the notice's recipient on the
// list in Settle's transaction; a delivery does not.
func TestSettleHardBounceSuppresses(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	a, b := claim(1, 0), claim(2, 0)
	a.AddressHMAC, b.AddressHMAC = digest("a@x"), digest("b@x")
	if _, err := ledger.Insert(ctx, db, opt("r1"), []ledger.Claim{a, b}); err != nil {
		t.Fatal(err)
	}
	err := ledger.WithTx(ctx, db, func(tx *sqlx.Tx) error {
		_, err := ledger.Settle(ctx, tx, "test", t0, []ledger.Settlement{
			{Key: a.Key, To: ledger.Failed, Kind: ledger.KindBounceHard, Event: "bounce", At: t0},
			{Key: b.Key, To: ledger.Sent, Kind: ledger.KindDelivered, Event: "delivered", At: t0},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ledger.SuppressionMatch(ctx, db, "email", [][]byte{digest("a@x"), digest("b@x")})
	if err != nil || !m[0] || m[1] {
		t.Fatalf("after settle: %v, %v", m, err)
	}
	list, _ := ledger.SuppressionList(ctx, db, 10)
	if len(list) != 1 || list[0].Source != ledger.SuppressedByEvidence || list[0].NoticeKey != a.Key {
		t.Fatalf("entry: %+v", list)
	}
}

func TestRecordUnreached(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	c := claim(1, 0)
	got, err := ledger.RecordUnreached(ctx, db, opt("r1"), ledger.ReasonSuppressed, []ledger.Claim{c})
	if err != nil || len(got) != 1 {
		t.Fatalf("record: %v, %v", got, err)
	}
	r := get(t, db, c.Key)
	if r.State != ledger.Failed || r.Attempts != 0 || r.LastError == nil || *r.LastError != ledger.ReasonSuppressed || r.Channel != "email" {
		t.Fatalf("row: %+v", r)
	}
	if got, _ := ledger.RecordUnreached(ctx, db, opt("r2"), ledger.ReasonSuppressed, []ledger.Claim{c}); len(got) != 0 {
		t.Fatal("recorded twice")
	}
}

// The claim statement probes the channel's list itself (Suppression):
// a listed recipient's notice is inserted failed with ReasonSuppressed,
// no attempt, no message id or token, and returned marked; the others
// are claimed. Without Suppression, or on another channel's list,
// nothing is probed.
func TestClaimProbesSuppression(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := ledger.SuppressionAdd(ctx, db, t0, []ledger.Suppression{
		{Channel: "email", Digest: digest("gone@x"), Reason: "test", Source: ledger.SuppressedByOperator},
		{Channel: "sms", Digest: digest("sms-only"), Reason: "test", Source: ledger.SuppressedByOperator},
	}); err != nil {
		t.Fatal(err)
	}
	gone, ok, other, none, off := claim(1, 0), claim(2, 0), claim(3, 0), claim(4, 0), claim(5, 0)
	gone.AddressHMAC, ok.AddressHMAC, other.AddressHMAC, off.AddressHMAC = digest("gone@x"), digest("ok@x"), digest("sms-only"), digest("gone@x")
	o := opt("r1")
	o.Suppression = true
	won, err := ledger.Insert(ctx, db, o, []ledger.Claim{gone, ok, other, none})
	if err != nil || len(won) != 4 {
		t.Fatalf("claim: %+v, %v", won, err)
	}
	for _, w := range won {
		if w.Suppressed != (w.Key == gone.Key) || w.Witnessed {
			t.Fatalf("won %+v", w)
		}
	}
	r := get(t, db, gone.Key)
	if r.State != ledger.Failed || r.Attempts != 0 || r.LastError == nil || *r.LastError != ledger.ReasonSuppressed ||
		r.MessageID != nil || r.CancelToken != nil || r.FirstClaimedAt != nil {
		t.Fatalf("suppressed row: %+v", r)
	}
	for _, k := range []string{ok.Key, other.Key, none.Key} {
		if r := get(t, db, k); r.State != ledger.Claimed || r.Attempts != 1 || r.LastError != nil {
			t.Fatalf("claimed row: %+v", r)
		}
	}
	won, err = ledger.Insert(ctx, db, opt("r1"), []ledger.Claim{off})
	if err != nil || len(won) != 1 || won[0].Suppressed || get(t, db, off.Key).State != ledger.Claimed {
		t.Fatalf("without the probe: %+v, %v", won, err)
	}
}

// A retry row whose recipient (the pass's digest now, not the one the
// row kept) is listed is failed instead of re-claimed, in the re-claim's
// statement; the others are re-claimed.
func TestReclaimProbesSuppression(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	a, b := claim(1, 0), claim(2, 0)
	if _, err := ledger.Insert(ctx, db, opt("r1"), []ledger.Claim{a, b}); err != nil {
		t.Fatal(err)
	}
	var outs []ledger.Outcome
	for _, c := range []ledger.Claim{a, b} {
		outs = append(outs, ledger.Outcome{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Retry, Error: "451"})
	}
	if _, err := ledger.RecordOutcomes(ctx, db, "r1", t0, outs); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.SuppressionAdd(ctx, db, t0, []ledger.Suppression{
		{Channel: "email", Digest: digest("gone@x"), Reason: "test", Source: ledger.SuppressedByOperator},
	}); err != nil {
		t.Fatal(err)
	}
	o := opt("r2")
	o.Now, o.Suppression = t0.Add(time.Hour), true
	won, err := ledger.ReclaimUnlessSuppressed(ctx, db, o, []string{a.Key, b.Key}, [][]byte{digest("gone@x"), digest("ok@x")}, nil)
	if err != nil || len(won) != 2 {
		t.Fatalf("re-claim: %+v, %v", won, err)
	}
	for _, w := range won {
		if w.Suppressed != (w.Key == a.Key) {
			t.Fatalf("won %+v", w)
		}
	}
	if r := get(t, db, a.Key); r.State != ledger.Failed || r.LastError == nil || *r.LastError != ledger.ReasonSuppressed || r.Attempts != 1 {
		t.Fatalf("suppressed retry: %+v", r)
	}
	if r := get(t, db, b.Key); r.State != ledger.Claimed || r.Attempts != 2 {
		t.Fatalf("re-claimed: %+v", r)
	}
}

// keyedUnder returns the key id of the entry of digest d, "none" without.
func keyedUnder(t *testing.T, db *sqlx.DB, d []byte) string {
	t.Helper()
	var out []string
	if err := db.Select(&out, `SELECT COALESCE(encode(key_id, 'hex'), '') FROM notice_suppression WHERE address_hmac = $1`, d); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		return "none"
	}
	return out[0]
}

// Across a secret rotation (issue 38): an entry found under a previous
// digest is re-recorded under the current one by the statement that found
// it, keeping its reason and time: the retry re-claim's and the sms
// stage's match. Entries not met stay as they are.
func TestSuppressionRekeyedWhereFound(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	keyA, keyB := []byte{0xa, 0xa, 0xa, 0xa, 0xa, 0xa, 0xa, 0xa}, []byte{0xb, 0xb, 0xb, 0xb, 0xb, 0xb, 0xb, 0xb}
	if _, err := ledger.SuppressionAdd(ctx, db, t0, []ledger.Suppression{
		{Channel: "email", Digest: digest("A|gone@x"), Reason: "complaint", Source: ledger.SuppressedByEvidence, KeyID: keyA},
		{Channel: "email", Digest: digest("A|other@x"), Reason: "complaint", Source: ledger.SuppressedByEvidence, KeyID: keyA},
		{Channel: "sms", Digest: digest("A|+1"), Reason: "stop", Source: ledger.SuppressedByProvider, KeyID: keyA},
	}); err != nil {
		t.Fatal(err)
	}
	a, b := claim(1, 0), claim(2, 0)
	if _, err := ledger.Insert(ctx, db, opt("r1"), []ledger.Claim{a, b}); err != nil {
		t.Fatal(err)
	}
	var outs []ledger.Outcome
	for _, c := range []ledger.Claim{a, b} {
		outs = append(outs, ledger.Outcome{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Retry, Error: "451"})
	}
	if _, err := ledger.RecordOutcomes(ctx, db, "r1", t0, outs); err != nil {
		t.Fatal(err)
	}
	o := opt("r2")
	o.Now, o.Suppression, o.KeyID = t0.Add(time.Hour), true, keyB
	won, err := ledger.ReclaimUnlessSuppressed(ctx, db, o, []string{a.Key, b.Key}, [][]byte{digest("B|gone@x"), digest("B|ok@x")},
		[][][]byte{{digest("A|gone@x")}, {digest("A|ok@x")}})
	if err != nil || len(won) != 2 {
		t.Fatalf("re-claim: %+v, %v", won, err)
	}
	for _, w := range won {
		if w.Suppressed != (w.Key == a.Key) {
			t.Fatalf("won %+v: only the address listed under A is suppressed", w)
		}
	}
	if got, old := keyedUnder(t, db, digest("B|gone@x")), keyedUnder(t, db, digest("A|gone@x")); got != "0b0b0b0b0b0b0b0b" || old != "none" {
		t.Fatalf("after the re-claim: under B %s, under A %s; want re-keyed", got, old)
	}
	if got := keyedUnder(t, db, digest("A|other@x")); got != "0a0a0a0a0a0a0a0a" {
		t.Fatalf("an entry no pass met: %s, want still under A", got)
	}
	hit, err := ledger.SuppressionMatchRekey(ctx, db, "sms", [][]byte{digest("B|+2"), digest("B|+1"), nil},
		[][][]byte{{digest("A|+2")}, {digest("A|+1")}, nil}, keyB)
	if err != nil || hit[0] || !hit[1] || hit[2] {
		t.Fatalf("sms match: %v, %v", hit, err)
	}
	if got := keyedUnder(t, db, digest("B|+1")); got != "0b0b0b0b0b0b0b0b" {
		t.Fatalf("sms entry: %s, want re-keyed under B", got)
	}
	list, err := ledger.SuppressionList(ctx, db, 10, "0a0a0a0a0a0a0a0a")
	if err != nil || len(list) != 1 || list[0].Reason != "complaint" {
		t.Fatalf("entries still under A: %+v, %v", list, err)
	}
	if ok, err := ledger.SuppressionRemove(ctx, db, "email", [][]byte{digest("B|other@x"), digest("A|other@x")}); err != nil || !ok {
		t.Fatalf("remove across keys: %v %v", ok, err)
	}
}
