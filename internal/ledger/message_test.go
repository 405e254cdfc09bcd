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
	// Recorded again (a retried batch): nothing changes, no error, and the
	// message stays the current attempt's (nothing moves to the table of
	// earlier attempts).
	if _, err := ledger.RecordOutcomes(ctx, db, "r", at, outs[1:2]); err != nil {
		t.Fatalf("record again: %v", err)
	}
	if n := earlierMessages(t, db); n != 0 {
		t.Fatalf("%d messages moved to notice_message by a retried batch, want 0", n)
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
// SELECT on every ledger column but the message's three, UPDATE on the
// ledger and INSERT alone on notice_message, the outcome statement keeps
// them in the row and the re-claim an earlier attempt's in notice_message,
// the look-ups work, and that role cannot read a message back.
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
	var readable string      // every column of the ledger but the message's
	if err := db.Get(&readable, `SELECT string_agg(column_name, ', ') FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'notice_ledger'
		  AND column_name NOT IN ('message', 'message_dict', 'message_attempt')`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE ROLE ` + role + ` NOLOGIN`,
		`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		`GRANT SELECT (` + readable + `), UPDATE ON notice_ledger TO ` + role,
		`GRANT INSERT ON notice_message TO ` + role,
		`GRANT SELECT, INSERT, DELETE ON notice_suppression TO ` + role, // the re-claim's probe
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
	first := []byte("To: someone@example.com\r\n\r\nYour subscription renews (first try).\r\n")
	msg := []byte("To: someone@example.com\r\n\r\nYour subscription renews.\r\n")
	sum1, sum := sha256.Sum256(first), sha256.Sum256(msg)
	if _, err := db.Exec(`SET ROLE ` + role); err != nil {
		t.Fatal(err)
	}
	record := func(run string, o ledger.Outcome) {
		t.Helper()
		if n, err := ledger.RecordOutcomes(ctx, db, run, at, []ledger.Outcome{o}); err != nil || n != 1 {
			t.Fatalf("record as the pass's role: %d, %v", n, err)
		}
	}
	// Attempt 1 hands a message over and is refused for now; the re-claim
	// of attempt 2 copies it into notice_message, and attempt 2's outcome
	// replaces it in the row.
	record("r", ledger.Outcome{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Retry, Digest: sum1[:], Message: first, Error: "451 try later"})
	reclaim := opt("r2")
	reclaim.Now = t0.Add(time.Hour)
	if won, err := ledger.Reclaim(ctx, db, reclaim, []string{c.Key}); err != nil || len(won) != 1 {
		t.Fatalf("re-claim as the pass's role: %d, %v", len(won), err)
	}
	record("r2", ledger.Outcome{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Sent, SentAt: at, Digest: sum[:], Message: msg})
	r, err := ledger.Get(ctx, db, c.Key)
	if err != nil {
		t.Fatalf("look-up as the pass's role: %v", err)
	}
	if _, err := ledger.MessageOf(ctx, db, r); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("the pass's role read a kept message: %v", err)
	}
	if _, err := db.Exec(`SELECT message FROM notice_ledger`); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("the pass's role read the message column: %v", err)
	}
	if _, err := db.Exec(`RESET ROLE`); err != nil {
		t.Fatal(err)
	}
	if got, err := ledger.MessageOf(ctx, db, r); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("rebuilt %q, %v", got, err)
	}
	r.Attempts, r.MessageSHA256 = 1, sum1[:]
	if got, err := ledger.MessageOf(ctx, db, r); err != nil || !bytes.Equal(got, first) {
		t.Fatalf("attempt 1 rebuilt %q, %v", got, err)
	}
}

// Earlier attempts stay provable: the re-claim of a row holding an
// earlier attempt's message copies it into notice_message with the digest
// recorded at its send time, where MessageOf finds it under its attempt
// after a later outcome replaced it in the row (with its own message, or
// with none when the retry handed nothing over); the current attempt's is
// in the row. EarlierMessages and MessageSample verify it against that
// digest, refuse it tampered with, and report one kept with no digest
// (before sql/0041) as unverifiable, never verified.
func TestEarlierAttemptsStayProvable(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	c := claim(2, 0)
	if won, err := ledger.Insert(ctx, db, opt("r1"), []ledger.Claim{c}); err != nil || len(won) != 1 {
		t.Fatalf("claim: %d, %v", len(won), err)
	}
	msg1, msg3 := []byte("attempt one\r\n"), []byte("attempt three\r\n")
	sum1, sum3 := sha256.Sum256(msg1), sha256.Sum256(msg3)
	steps := []ledger.Outcome{
		{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Retry, Digest: sum1[:], Message: msg1, Error: "451 after DATA"},
		{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Retry, Error: "connection refused"}, // nothing handed over
		{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Sent, SentAt: t0, Digest: sum3[:], Message: msg3},
	}
	for i, o := range steps {
		run := fmt.Sprintf("r%d", i+1)
		if i > 0 {
			o := opt(run)
			o.Now = t0.Add(time.Duration(i) * time.Hour)
			if won, err := ledger.Reclaim(ctx, db, o, []string{c.Key}); err != nil || len(won) != 1 {
				t.Fatalf("re-claim %d: %d, %v", i+1, len(won), err)
			}
		}
		if n, err := ledger.RecordOutcomes(ctx, db, run, t0, []ledger.Outcome{o}); err != nil || n != 1 {
			t.Fatalf("outcome %d: %d, %v", i+1, n, err)
		}
	}
	if n := earlierMessages(t, db); n != 1 {
		t.Fatalf("notice_message holds %d messages, want attempt 1's", n)
	}
	r, err := ledger.Get(ctx, db, c.Key)
	if err != nil || r.Attempts != 3 {
		t.Fatalf("row: %+v, %v", r, err)
	}
	if got, err := ledger.MessageOf(ctx, db, r); err != nil || !bytes.Equal(got, msg3) {
		t.Fatalf("attempt 3 rebuilt %q, %v", got, err)
	}
	r.Attempts, r.MessageSHA256 = 1, sum1[:]
	if got, err := ledger.MessageOf(ctx, db, r); err != nil || !bytes.Equal(got, msg1) {
		t.Fatalf("attempt 1 rebuilt %q, %v", got, err)
	}
	r.Attempts = 2
	if _, err := ledger.MessageOf(ctx, db, r); !errors.Is(err, ledger.ErrNoMessage) {
		t.Fatalf("attempt 2 handed nothing over: %v, want ErrNoMessage", err)
	}

	// The re-claim kept attempt 1's send-time digest with its message
	// (sql/0041), so it is verified, by the proof and by --verify.
	r, err = ledger.Get(ctx, db, c.Key)
	if err != nil {
		t.Fatal(err)
	}
	earlier, err := ledger.EarlierMessages(ctx, db, r)
	if err != nil || len(earlier) != 1 || earlier[0].Attempt != 1 || !earlier[0].Verified() ||
		!bytes.Equal(earlier[0].Digest, sum1[:]) || !bytes.Equal(earlier[0].Message, msg1) {
		t.Fatalf("earlier attempts = %+v, %v; want attempt 1 verified", earlier, err)
	}
	check, err := ledger.MessageSample(ctx, db, 0, time.Time{}, time.Time{})
	if err != nil || check.Checked != 2 || check.Earlier != 1 || check.Verified != 2 || len(check.Mismatched) != 0 || check.Unverifiable != 0 {
		t.Fatalf("sample = %+v, %v; want attempts 1 and 3 verified", check, err)
	}

	// Attempt 1's kept message tampered with: refused, naming the notice
	// and the attempt, and counted by --verify.
	forged, err := ledger.KeepMessage([]byte("attempt one, altered\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE notice_message SET body = $1 WHERE attempt = 1`, forged); err != nil {
		t.Fatal(err)
	}
	var de *ledger.DigestError
	if _, err := ledger.EarlierMessages(ctx, db, r); !errors.As(err, &de) || de.Key != c.Key || de.Attempt != 1 ||
		!strings.Contains(err.Error(), notice.Short(c.Key)) || !strings.Contains(err.Error(), "attempt 1") {
		t.Fatalf("tampered attempt 1: %v, want a DigestError naming the notice and attempt 1", err)
	}
	check, err = ledger.MessageSample(ctx, db, 0, time.Time{}, time.Time{})
	if err != nil || check.Checked != 2 || check.Verified != 1 || len(check.Mismatched) != 1 || check.Mismatched[0] != notice.Short(c.Key)+" attempt 1" {
		t.Fatalf("sample after tampering = %+v, %v; want attempt 1 mismatched", check, err)
	}

	// Kept before sql/0041, with no digest: read back, never verified.
	if _, err := db.Exec(`UPDATE notice_message SET body = $1, digest = NULL WHERE attempt = 1`, forged); err != nil {
		t.Fatal(err)
	}
	earlier, err = ledger.EarlierMessages(ctx, db, r)
	if err != nil || len(earlier) != 1 || earlier[0].Verified() || earlier[0].Digest != nil {
		t.Fatalf("attempt 1 with no digest = %+v, %v; want it unverified", earlier, err)
	}
	check, err = ledger.MessageSample(ctx, db, 0, time.Time{}, time.Time{})
	if err != nil || check.Checked != 1 || check.Verified != 1 || check.Earlier != 0 || check.Unverifiable != 1 || len(check.Mismatched) != 0 {
		t.Fatalf("sample with attempt 1 kept before 0041 = %+v, %v; want it unverifiable, not verified", check, err)
	}
}

// The messages kept in notice_message before sql/0036 moved the current
// attempt's into the ledger row stay readable and verifiable.
func TestMessagesKeptBeforeTheColumnStayReadable(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	c := claim(3, 0)
	if won, err := ledger.Insert(ctx, db, opt("r"), []ledger.Claim{c}); err != nil || len(won) != 1 {
		t.Fatalf("claim: %d, %v", len(won), err)
	}
	msg := []byte("kept the old way\r\n")
	sum := sha256.Sum256(msg)
	kept, err := ledger.KeepMessage(msg)
	if err != nil {
		t.Fatal(err)
	}
	dict, err := ledger.MessageDict()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := ledger.RecordOutcomes(ctx, db, "r", t0, []ledger.Outcome{{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Sent, SentAt: t0, Digest: sum[:]}}); err != nil || n != 1 {
		t.Fatalf("outcome: %d, %v", n, err)
	}
	// What the outcome statement of sql/0023 wrote.
	if _, err := db.Exec(`INSERT INTO notice_message (period_start, key, attempt, dict, body) VALUES ($1, decode($2, 'hex'), 1, $3, $4)`,
		c.PeriodStart, c.Key, dict.ID, kept); err != nil {
		t.Fatal(err)
	}
	r, err := ledger.Get(ctx, db, c.Key)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ledger.MessageOf(ctx, db, r); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("rebuilt %q, %v", got, err)
	}
	check, err := ledger.MessageSample(ctx, db, 0, time.Time{}, time.Time{})
	if err != nil || check.Checked != 1 || check.Verified != 1 || check.Missing != 0 {
		t.Fatalf("sample = %+v, %v", check, err)
	}
}

// earlierMessages counts the rows of notice_message.
func earlierMessages(t *testing.T, db *sqlx.DB) int {
	t.Helper()
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM notice_message`); err != nil {
		t.Fatal(err)
	}
	return n
}
