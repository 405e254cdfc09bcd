package proof_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/pgtest"
	"scan/internal/proof"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// scan proof checks every kept attempt, not only the current one: an
// earlier attempt kept with its send-time digest (sql/0041) is listed as
// verified, one kept before 0041 (no digest) as unverifiable, never as
// verified, and one tampered with refuses the whole notice, naming it and
// the attempt, with no file written for it. Against a real PostgreSQL.
func TestProofOfEarlierAttempts(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	key := strings.Repeat("ab", 32)
	c := ledger.Claim{Key: key, Tuple: notice.Tuple{SubscriptionID: "sub_earlier", Kind: "renewal_notice_t72",
		PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		RenewsAt: t0.Add(48 * time.Hour), WindowClosesAt: t0.Add(24 * time.Hour), Domain: "example.com", MessageID: key[:32] + "@n.example.com"}
	if won, err := ledger.Insert(ctx, db, ledger.ClaimOptions{State: ledger.Claimed, Now: t0, RunID: "r1"}, []ledger.Claim{c}); err != nil || len(won) != 1 {
		t.Fatalf("claim: %d, %v", len(won), err)
	}
	msg1 := []byte("To: jane@example.com\r\nSubject: Renewal\r\n\r\nYou will be charged 12.99 (first try).\r\n")
	msg2 := []byte("To: jane@example.com\r\nSubject: Renewal\r\n\r\nYou will be charged 12.99.\r\n")
	sum1, sum2 := sha256.Sum256(msg1), sha256.Sum256(msg2)
	record := func(run string, o ledger.Outcome) {
		t.Helper()
		if n, err := ledger.RecordOutcomes(ctx, db, run, t0, []ledger.Outcome{o}); err != nil || n != 1 {
			t.Fatalf("outcome of %s: %d, %v", run, n, err)
		}
	}
	record("r1", ledger.Outcome{Key: key, PeriodStart: c.PeriodStart, State: ledger.Retry, Digest: sum1[:], Message: msg1, Error: "451 after DATA"})
	if won, err := ledger.Reclaim(ctx, db, ledger.ClaimOptions{State: ledger.Claimed, Now: t0.Add(time.Hour), RunID: "r2"}, []string{key}); err != nil || len(won) != 1 {
		t.Fatalf("re-claim: %d, %v", len(won), err)
	}
	record("r2", ledger.Outcome{Key: key, PeriodStart: c.PeriodStart, State: ledger.Sent, SentAt: t0.Add(time.Hour), Digest: sum2[:], Message: msg2})

	attempts := func(wantVerification ...string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "proof")
		if w, err := proof.Write(ctx, db, nil, proof.Filter{SubscriptionID: "sub_earlier"}, dir, t0); err != nil || len(w) != 1 {
			t.Fatalf("proof: %+v, %v", w, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, notice.Short(key)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var rec proof.Record
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		if !rec.DigestVerified || len(rec.Attempts) != len(wantVerification) {
			t.Fatalf("record's attempts = %+v, want %d", rec.Attempts, len(wantVerification))
		}
		for i, a := range rec.Attempts {
			if a.Attempt != i+1 || a.Verification != wantVerification[i] {
				t.Fatalf("attempt %d = %+v, want %q", i+1, a, wantVerification[i])
			}
		}
		if rec.Attempts[0].Digest != hexOr(rec.Attempts[0].Verification, sum1[:]) || rec.Attempts[1].Digest != hex.EncodeToString(sum2[:]) {
			t.Fatalf("attempts' digests = %q, %q", rec.Attempts[0].Digest, rec.Attempts[1].Digest)
		}
	}
	attempts("verified", "verified")

	// Kept before sql/0041: no digest, so unverifiable, and said so.
	if _, err := db.Exec(`UPDATE notice_message SET digest = NULL WHERE attempt = 1`); err != nil {
		t.Fatal(err)
	}
	attempts(ledger.Unverifiable, "verified")

	// Attempt 1's message tampered with (its digest back): the notice is
	// refused, named with the attempt, and no file is written for it.
	forged, err := ledger.KeepMessage([]byte("To: jane@example.com\r\n\r\nYou will be charged 9.99.\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE notice_message SET body = $1, digest = $2 WHERE attempt = 1`, forged, sum1[:]); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "proof")
	w, err := proof.Write(ctx, db, nil, proof.Filter{SubscriptionID: "sub_earlier"}, dir, t0)
	var refused *proof.RefusedError
	var de *ledger.DigestError
	if !errors.As(err, &refused) || !errors.As(refused.Refused[0], &de) || de.Attempt != 1 || len(w) != 0 ||
		!strings.Contains(err.Error(), notice.Short(key)) || !strings.Contains(err.Error(), "attempt 1") {
		t.Fatalf("proof of a tampered earlier attempt: %+v, %v; want it refused naming %s attempt 1", w, err, notice.Short(key))
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Fatalf("proof wrote %d file(s) for a notice whose earlier attempt does not verify", len(files))
	}
}

// hexOr is the digest the record shows for an earlier attempt: none when
// it was kept before sql/0041.
func hexOr(verification string, sum []byte) string {
	if verification == ledger.Unverifiable {
		return ""
	}
	return hex.EncodeToString(sum)
}
