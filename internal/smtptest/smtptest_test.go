package smtptest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"scan/internal/smtptest"
)

const msg = "From: a@example.com\r\nTo: b@example.org\r\nMessage-ID: <id-1@example.com>\r\nSubject: hi\r\n\r\nbody\r\n"

func dial(t *testing.T, s *smtptest.Server) *smtp.Client {
	t.Helper()
	c, err := smtp.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestAcceptAndCount(t *testing.T) {
	t.Parallel()
	var seen []string
	s := smtptest.New(t, smtptest.OnMessage(func(r smtptest.Received) { seen = append(seen, r.MessageID) }))
	if !strings.HasPrefix(s.URL(), "smtp://127.0.0.1:") || s.CertPool() != nil {
		t.Fatalf("URL = %q", s.URL())
	}
	c := dial(t, s)
	for range 2 {
		if err := c.SendMail("a@example.com", []string{"b@example.org"}, strings.NewReader(msg)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Wait(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	r := <-s.Received()
	if r.MessageID != "id-1@example.com" || r.From != "a@example.com" || r.To[0] != "b@example.org" || r.Conn != 1 || r.TLS {
		t.Errorf("Received = %+v", r)
	}
	if s.Count("<id-1@example.com>") != 2 || s.Count("id-1@example.com") != 2 || s.Total() != 2 || s.Connections() != 1 {
		t.Errorf("Count/Total/Connections = %d/%d/%d", s.Count("id-1@example.com"), s.Total(), s.Connections())
	}
	if len(s.Messages()) != 2 || len(seen) != 2 {
		t.Errorf("%d messages, %d callbacks", len(s.Messages()), len(seen))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := s.Wait(ctx, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait for a third message = %v", err)
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode     smtptest.Mode
		code     int
		recorded int
	}{
		{smtptest.TempFailRcpt, 451, 0},
		{smtptest.TempFailData, 451, 0},
		{smtptest.PermFailRcpt, 550, 0},
		{smtptest.PermFailData, 554, 0},
		{smtptest.HangAfterData, 451, 1},
	}
	for _, tt := range tests {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			s := smtptest.New(t)
			s.SetMode(tt.mode)
			if tt.mode == smtptest.HangAfterData {
				go func() {
					<-s.Received()
					s.Release()
				}()
			}
			err := dial(t, s).SendMail("a@example.com", []string{"b@example.org"}, strings.NewReader(msg))
			var se *smtp.SMTPError
			if !errors.As(err, &se) || se.Code != tt.code {
				t.Fatalf("SendMail error = %v, want %d", err, tt.code)
			}
			if s.Total() != tt.recorded {
				t.Errorf("Total = %d, want %d", s.Total(), tt.recorded)
			}
		})
	}
}

func TestCloseAfterData(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.WithMode(smtptest.CloseAfterData))
	err := dial(t, s).SendMail("a@example.com", []string{"b@example.org"}, strings.NewReader(msg))
	var se *smtp.SMTPError
	if err == nil || errors.As(err, &se) {
		t.Fatalf("SendMail error = %v, want an I/O error", err)
	}
	if s.Total() != 1 {
		t.Errorf("Total = %d", s.Total())
	}
}

func TestTLSAndAuth(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.WithSTARTTLS(), smtptest.WithAuth("u", "p"))
	if !strings.HasPrefix(s.URL(), "smtp://u:p@127.0.0.1:") {
		t.Fatalf("URL = %q", s.URL())
	}
	c, err := smtp.DialStartTLS(s.Addr(), s.ClientTLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mail("a@example.com", nil); err == nil {
		t.Fatal("MAIL accepted before AUTH")
	}
	if err := c.Auth(sasl.NewPlainClient("", "u", "wrong")); err == nil {
		t.Fatal("wrong password accepted")
	}
	if err := c.Auth(sasl.NewPlainClient("", "u", "p")); err != nil {
		t.Fatal(err)
	}
	if err := c.SendMail("a@example.com", []string{"b@example.org"}, strings.NewReader(msg)); err != nil {
		t.Fatal(err)
	}
	if m := s.Messages(); len(m) != 1 || !m[0].TLS {
		t.Fatalf("messages = %+v", m)
	}

	tlsSrv := smtptest.New(t, smtptest.WithImplicitTLS(), smtptest.WithLatency(time.Millisecond))
	if !strings.HasPrefix(tlsSrv.URL(), "smtps://") {
		t.Fatalf("URL = %q", tlsSrv.URL())
	}
	c2, err := smtp.DialTLS(tlsSrv.Addr(), tlsSrv.ClientTLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.SendMail("a@example.com", []string{"b@example.org"}, strings.NewReader(msg)); err != nil {
		t.Fatal(err)
	}
}

// WithReplyLatency: a reply leaves no sooner than the latency after what
// it answers arrived, the greeting included; pipelined commands wait once,
// together. (Only the lower bound is checked: the rest is the benchmark's
// to measure, BenchmarkSMTPAtLatency in package send.)
func TestReplyLatency(t *testing.T) {
	t.Parallel()
	const d = 30 * time.Millisecond
	s := smtptest.New(t, smtptest.WithReplyLatency(d))
	start := time.Now()
	raw, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	greeting, err := textproto.NewConn(raw).ReadLine()
	if took := time.Since(start); err != nil || !strings.HasPrefix(greeting, "220 ") || took < d {
		t.Fatalf("greeting %q (%v) after %s, want 220 after at least %s", greeting, err, took, d)
	}
	c := dial(t, s)
	start = time.Now()
	if err := c.SendMail("a@example.com", []string{"b@example.org"}, strings.NewReader(msg)); err != nil {
		t.Fatal(err)
	}
	// The greeting, EHLO, then MAIL, RCPT and DATA (go-smtp's client does
	// not pipeline) and the end of data: six exchanges, one d each.
	if took := time.Since(start); took < 6*d {
		t.Fatalf("a message after %s, want at least %s", took, 6*d)
	}
	if s.Total() != 1 {
		t.Fatalf("%d messages", s.Total())
	}
}

// A test that ends at once after New (a usage test that never sends)
// must not hang in the server's cleanup: the listener is closed even when
// the serving goroutine had not reached Serve yet.
func TestCleanupRightAfterNew(t *testing.T) {
	t.Parallel()
	for i := range 200 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { _ = smtptest.New(t) })
	}
}
