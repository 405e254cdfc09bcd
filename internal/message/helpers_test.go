package message_test

import (
	"testing"

	"scan/internal/message"
	"scan/internal/message/messagetest"
	"scan/internal/notice"
	"scan/internal/send"
)

// The helpers both message's and send's tests use, from messagetest.
var key = messagetest.Key

// sample returns a valid notice number i to someone at domain.
func sample(i int, domain string) notice.Notice { return messagetest.Notice(i, domain) }

func newRenderer(t testing.TB) *message.Renderer { t.Helper(); return messagetest.NewRenderer(t) }

func render(t testing.TB, r *message.Renderer, n notice.Notice) *notice.Message {
	t.Helper()
	return messagetest.Render(t, r, n)
}

// reportCPU adds the process's CPU time per op to b's results as
// cpu-ns/op (messagetest.ReportCPU).
func reportCPU(b *testing.B) func() { return messagetest.ReportCPU(b) }

func newSMTP(t *testing.T, cfg send.SMTPConfig) *send.SMTP {
	t.Helper()
	s, err := send.NewSMTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
