package preview_test

import (
	"strings"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/preview"
)

// Status tells the operator what a pass now would do, the first reason
// that applies winning, with the window when there is one.
func TestStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	opens, closes := now.Add(time.Hour), now.Add(48*time.Hour)
	for _, tc := range []struct {
		p    preview.Preview
		want string
	}{
		{preview.Preview{Invalid: "missing_amount", Due: true}, "a pass would not send it: missing_amount"},
		{preview.Preview{Ledger: ledger.Sent, Due: true}, "already in the ledger (state sent)"},
		{preview.Preview{Due: true, Deferred: true}, "inside the recipient's quiet hours"},
		{preview.Preview{Due: true}, "due now: a pass now would send this"},
		{preview.Preview{Opens: opens, Closes: closes}, "not due yet (window 2026-11-30T03:00:00Z to 2026-12-02T02:00:00Z)"},
		{preview.Preview{Opens: now.Add(-72 * time.Hour), Closes: now.Add(-time.Hour)}, "not due now (inactive, or its window has closed)"},
	} {
		if got := preview.Status(tc.p, now); !strings.HasPrefix(got, tc.want) && !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

// The message as a person reads it: the header block with LF line ends,
// a blank line, and the text part ending in a newline.
func TestHeadersAndText(t *testing.T) {
	t.Parallel()
	m := &notice.Message{Raw: []byte("Subject: Renewal\r\nTo: x\r\n\r\n--boundary\r\nbody"), Text: "Hello\r\nthere"}
	if got := string(preview.HeadersAndText(m)); got != "Subject: Renewal\nTo: x\n\nHello\nthere\n" {
		t.Errorf("%q", got)
	}
}
