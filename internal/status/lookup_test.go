package status_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/status"
)

// The terminal form of lookup: under the table, each notice's digest and
// its evidence by attempt.
func TestLookupPrintsEvidenceOnATerminal(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("ab", 32)
	at := time.Date(2026, 11, 30, 2, 1, 0, 0, time.UTC)
	hs := []ledger.History{
		{Row: ledger.Row{NoticeKey: key, Kind: "renewal_notice_t72", Revision: 0, State: ledger.Sent, Attempts: 2, MessageSHA256: bytes.Repeat([]byte{0xcd}, 32)},
			Evidence: []ledger.Evidence{
				{Attempt: 1, Kind: ledger.KindNotSent, Event: "sendgrid:dropped", At: &at},
				{Attempt: 2, Kind: ledger.KindDelivered, Event: "sendgrid:delivered", Detail: "250 OK"},
			}},
		{Row: ledger.Row{NoticeKey: strings.Repeat("ef", 32), Kind: "renewal_notice_t72", State: ledger.Claimed, Attempts: 1}},
	}
	var b bytes.Buffer
	if err := status.WriteEvidence(&b, hs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"2 attempt(s), now sent", "sha256 of the message handed over: " + strings.Repeat("cd", 32),
		"1        not_sent   2026-11-30T02:01:00Z  sendgrid:dropped", "2        delivered  -                     sendgrid:delivered  250 OK",
		"now claimed", "- (no message handed over in this attempt)", "no provider evidence kept",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// The quarantine listing: the oldest first, at most the limit, and the
// whole count only when the list is cut; a claim that is not older than
// the cut-off, or has an outcome, is not in it.
func TestQuarantineListIsCutAtTheLimit(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	claim(t, db, "r1", "email", t0, ledger.Claimed, 3)
	claim(t, db, "r1", "email", t0.Add(time.Minute), ledger.Claimed, 1, 2)
	claim(t, db, "r1", "email", t0, ledger.Sent, 4)
	claim(t, db, "r2", "email", t0.Add(time.Hour), ledger.Claimed, 5)
	before := t0.Add(30 * time.Minute)
	for _, c := range []struct{ limit, rows, total int }{{1, 1, 3}, {2, 2, 3}, {3, 3, 3}, {10, 3, 3}} {
		rows, total, err := status.QuarantineList(ctx, db, before, c.limit)
		if err != nil || len(rows) != c.rows || total != c.total {
			t.Fatalf("limit %d: %d rows of %d, %v; want %d of %d", c.limit, len(rows), total, err, c.rows, c.total)
		}
		if rows[0].SubscriptionID != "sub_3" {
			t.Fatalf("limit %d: the oldest is %s, want sub_3", c.limit, rows[0].SubscriptionID)
		}
	}
	var b strings.Builder
	rows, _, _ := status.QuarantineList(ctx, db, before, 10)
	if err := status.Rows(rows, "").Print(&b, "table"); err != nil || strings.Count(b.String(), "\n") != 4 || !strings.Contains(b.String(), "sub_1") {
		t.Fatalf("table: %v\n%s", err, b.String())
	}
}

// Err is nil when all is well, else ErrNeedsPerson with every problem in
// one line (scan status's exit 1 and its message).
func TestErrNamesEveryProblem(t *testing.T) {
	t.Parallel()
	if err := (status.Status{Problems: []string{}}).Err(); err != nil {
		t.Fatalf("all is well: %v", err)
	}
	err := status.Status{Problems: []string{"quarantine: 2 claims", "recovery needed"}}.Err()
	if !errors.Is(err, status.ErrNeedsPerson) || !strings.Contains(err.Error(), "quarantine: 2 claims; recovery needed") {
		t.Fatalf("two problems: %v", err)
	}
}
