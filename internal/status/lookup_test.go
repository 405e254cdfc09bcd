package status_test

import (
	"bytes"
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
