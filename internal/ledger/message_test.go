package ledger_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/pgtest"
)

// The dictionary the pass compresses against is, byte for byte, the one
// the migration wrote to the database, which is where the proof reads it.
func TestMessageDictionaryIsTheMigrations(t *testing.T) {
	t.Parallel()
	db := setup(t)
	dict, err := ledger.MessageDict()
	if err != nil || len(dict.Body) < 4096 {
		t.Fatalf("dictionary: %d bytes, %v", len(dict.Body), err)
	}
	stored, err := ledger.StoredDict(context.Background(), db, dict.ID)
	if err != nil || !bytes.Equal(stored, dict.Body) {
		t.Fatalf("the database's dictionary %d (%d bytes, %v) differs from the code's (%d bytes)", dict.ID, len(stored), err, len(dict.Body))
	}
}

// An outcome's message is kept by the outcome statement and rebuilt to
// its digest; no message kept, or one not matching, is an error, never
// close enough; a row no longer claimed by the run keeps nothing.
func TestMessageKeptWithTheOutcomeAndVerified(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	period := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	var cs []ledger.Claim
	for i := range 3 {
		k := fmt.Sprintf("%064x", i+1)
		cs = append(cs, ledger.Claim{Key: k, Tuple: notice.Tuple{SubscriptionID: fmt.Sprintf("sub_%d", i), Kind: "renewal_notice_t72", PeriodStart: period},
			RenewsAt: at.Add(48 * time.Hour), WindowClosesAt: at.Add(24 * time.Hour), Domain: "example.com", MessageID: k[:32] + "@n.example.com"})
	}
	if won, err := ledger.Insert(ctx, db, ledger.ClaimOptions{State: ledger.Claimed, Now: at, RunID: "r"}, cs); err != nil || len(won) != 3 {
		t.Fatalf("claim: %d, %v", len(won), err)
	}
	msg := []byte("From: notices@example.com\r\nTo: someone@example.com\r\n\r\nYour subscription renews.\r\n")
	sum := sha256.Sum256(msg)
	outs := []ledger.Outcome{
		{Key: cs[0].Key, PeriodStart: period, State: ledger.Sent, SentAt: at, Digest: sum[:], Message: msg},
		{Key: cs[1].Key, PeriodStart: period, State: ledger.Claimed, Digest: sum[:], Message: msg, Error: "timeout after DATA"},
		{Key: cs[2].Key, PeriodStart: period, State: ledger.Retry, Error: "421"},
	}
	if n, err := ledger.RecordOutcomes(ctx, db, "r", at, outs); err != nil || n != 3 {
		t.Fatalf("record: %d, %v", n, err)
	}
	// Recorded again (a retried batch): nothing changes, no error.
	if _, err := ledger.RecordOutcomes(ctx, db, "r", at, outs[1:2]); err != nil {
		t.Fatalf("record again: %v", err)
	}
	for _, k := range []string{cs[0].Key, cs[1].Key} {
		r, err := ledger.Get(ctx, db, k)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ledger.MessageOf(ctx, db, r); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%s: rebuilt %q, %v", notice.Short(k), got, err)
		}
		r.MessageSHA256 = make([]byte, 32) // a digest the message does not hash to
		var de *ledger.DigestError
		if _, err := ledger.MessageOf(ctx, db, r); !errors.As(err, &de) || de.Key != k {
			t.Fatalf("a wrong digest: %v, want a DigestError naming the notice", err)
		}
	}
	r, err := ledger.Get(ctx, db, cs[2].Key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.MessageOf(ctx, db, r); !errors.Is(err, ledger.ErrNoMessage) {
		t.Fatalf("nothing handed over: %v, want ErrNoMessage", err)
	}
	check, err := ledger.MessageSample(ctx, db, 0, time.Time{}, time.Time{})
	if err != nil || check.Checked != 2 || check.Verified != 2 || len(check.Mismatched) != 0 || check.Bytes <= 0 || check.Bytes >= int64(2*len(msg)) {
		t.Fatalf("sample = %+v, %v", check, err)
	}
}

// The pass's database role needs no read right on the kept messages: with
// INSERT alone on notice_message (and its rights on the ledger), the
// outcome statement keeps them, and that role cannot read them back.
func TestThePassKeepsMessagesItCannotRead(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	db := sqlx.MustOpen("postgres", dsn)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	// Migrate first: its lock (goose's lease row) takes a session of its
	// own beside the migrating one.
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one session from here on: SET ROLE holds for every statement
	db.SetMaxIdleConns(1)
	var schema string
	if err := db.Get(&schema, `SELECT current_schema()`); err != nil {
		t.Fatal(err)
	}
	role := schema + "_pass" // roles are the server's: named for this test's own schema
	for _, q := range []string{
		`CREATE ROLE ` + role + ` NOLOGIN`,
		`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		`GRANT SELECT, UPDATE ON notice_ledger TO ` + role,
		`GRANT INSERT ON notice_message TO ` + role,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		_, _ = db.Exec(`RESET ROLE`)
		_, _ = db.Exec(`DROP OWNED BY ` + role)
		_, _ = db.Exec(`DROP ROLE ` + role)
	})
	at := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	c := claim(1, 0)
	if won, err := ledger.Insert(ctx, db, opt("r"), []ledger.Claim{c}); err != nil || len(won) != 1 {
		t.Fatalf("claim: %d, %v", len(won), err)
	}
	msg := []byte("To: someone@example.com\r\n\r\nYour subscription renews.\r\n")
	sum := sha256.Sum256(msg)
	if _, err := db.Exec(`SET ROLE ` + role); err != nil {
		t.Fatal(err)
	}
	out := ledger.Outcome{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Sent, SentAt: at, Digest: sum[:], Message: msg}
	if n, err := ledger.RecordOutcomes(ctx, db, "r", at, []ledger.Outcome{out}); err != nil || n != 1 {
		t.Fatalf("record as the pass's role: %d, %v", n, err)
	}
	r, err := ledger.Get(ctx, db, c.Key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.MessageOf(ctx, db, r); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("the pass's role read a kept message: %v", err)
	}
	if _, err := db.Exec(`RESET ROLE`); err != nil {
		t.Fatal(err)
	}
	if got, err := ledger.MessageOf(ctx, db, r); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("rebuilt %q, %v", got, err)
	}
}
