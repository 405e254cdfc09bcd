package send_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"scan/internal/send"
	"scan/internal/smtptest"
)

func newSMTP(t *testing.T, cfg send.SMTPConfig) *send.SMTP {
	t.Helper()
	s, err := send.NewSMTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSMTPAccept(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1})
	m := render(t, newRenderer(t), notice(1, "example.org"))
	rcpt, err := s.Send(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	if rcpt.ProviderID != "" { // smtptest's default reply, "OK: queued", names no id
		t.Errorf("ProviderID %q from a reply without an id", rcpt.ProviderID)
	}
	if srv.Count(m.MessageID) != 1 {
		t.Fatalf("Count = %d", srv.Count(m.MessageID))
	}
	got := srv.Messages()[0]
	if got.From != "notices@example.com" || len(got.To) != 1 || got.To[0] != "user1@example.org" {
		t.Errorf("envelope = %q -> %q", got.From, got.To)
	}
	if !bytes.Equal(bytes.TrimSuffix(got.Raw, []byte("\r\n")), bytes.TrimSuffix(m.Raw, []byte("\r\n"))) {
		t.Errorf("server got a different message:\n%s", got.Raw)
	}
}

func TestSMTPClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode  smtptest.Mode
		class send.Class
		code  int
	}{
		{smtptest.TempFailRcpt, send.Transient, 451},
		{smtptest.TempFailData, send.Transient, 451},
		{smtptest.PermFailRcpt, send.Permanent, 550},
		{smtptest.PermFailData, send.Permanent, 554},
		{smtptest.CloseAfterData, send.Unknown, 0},
		{smtptest.HangAfterData, send.Unknown, 0},
	}
	for _, tt := range tests {
		t.Run(tt.class.String()+"/"+modeName(tt.mode), func(t *testing.T) {
			t.Parallel()
			srv := smtptest.New(t, smtptest.WithMode(tt.mode))
			// HangAfterData ends by the send's timeout; the other modes
			// answer, so they keep a timeout a loaded machine cannot reach
			// before the server's first reply (500 ms did, at load 18).
			timeout := 30 * time.Second
			if tt.mode == smtptest.HangAfterData {
				timeout = 500 * time.Millisecond
			}
			s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1, Timeout: timeout})
			n := notice(1, "example.org")
			_, err := s.Send(t.Context(), render(t, newRenderer(t), n))
			var se *send.Error
			if !errors.As(err, &se) || se.Class != tt.class || se.Code != tt.code {
				t.Fatalf("Send error = %#v (%v), want class %v code %d", se, err, tt.class, tt.code)
			}
			if strings.Contains(err.Error(), n.To) {
				t.Errorf("error %q carries the recipient", err)
			}
		})
	}
}

func modeName(m smtptest.Mode) string {
	return [...]string{"accept", "4xx-rcpt", "4xx-data", "5xx-rcpt", "5xx-data", "hang", "close"}[m]
}

func TestSMTPHangHonoursContext(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t, smtptest.WithMode(smtptest.HangAfterData))
	s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1, Timeout: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-srv.Received() // the message is handed over; now give up
		cancel()
	}()
	_, err := s.Send(ctx, render(t, newRenderer(t), notice(1, "example.org")))
	if send.Classify(err) != send.Unknown {
		t.Fatalf("Send error = %v, want Unknown", err)
	}
}

func TestSMTPConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := newSMTP(t, send.SMTPConfig{URL: "smtp://user:hunter2@" + addr})
	_, err = s.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org")))
	if send.Classify(err) != send.Transient {
		t.Fatalf("Send error = %v, want Transient", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %q leaks the password", err)
	}
}

func TestSMTPConnectionReuse(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1})
	r := newRenderer(t)
	for i := range 10 {
		if _, err := s.Send(t.Context(), render(t, r, notice(i, "example.org"))); err != nil {
			t.Fatal(err)
		}
	}
	// A message refused at its end leaves the connection in step.
	srv.SetMode(smtptest.PermFailData)
	if _, err := s.Send(t.Context(), render(t, r, notice(10, "example.org"))); send.Classify(err) != send.Permanent {
		t.Fatal(err)
	}
	srv.SetMode(smtptest.Accept)
	if _, err := s.Send(t.Context(), render(t, r, notice(11, "example.org"))); err != nil {
		t.Fatal(err)
	}
	if srv.Connections() != 1 || srv.Total() != 11 {
		t.Fatalf("%d connections, %d messages; want 1, 11", srv.Connections(), srv.Total())
	}
	// A connection the server closed while idle is replaced without
	// failing the send.
	srv.DropConnections()
	if _, err := s.Send(t.Context(), render(t, r, notice(20, "example.org"))); err != nil {
		t.Fatalf("send on a connection closed while idle: %v", err)
	}
	if srv.Connections() != 2 {
		t.Fatalf("%d connections, want 2", srv.Connections())
	}
	// A connection dropped mid-send is replaced.
	srv.SetMode(smtptest.CloseAfterData)
	if _, err := s.Send(t.Context(), render(t, r, notice(12, "example.org"))); send.Classify(err) != send.Unknown {
		t.Fatal(err)
	}
	// So is one left mid-transaction by a refused recipient.
	srv.SetMode(smtptest.PermFailRcpt)
	if _, err := s.Send(t.Context(), render(t, r, notice(13, "example.org"))); send.Classify(err) != send.Permanent {
		t.Fatal(err)
	}
	srv.SetMode(smtptest.Accept)
	if _, err := s.Send(t.Context(), render(t, r, notice(14, "example.org"))); err != nil {
		t.Fatal(err)
	}
	if srv.Connections() != 4 {
		t.Fatalf("%d connections, want 4", srv.Connections())
	}
}

func TestSMTPPoolBound(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 3})
	r := newRenderer(t)
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			if _, err := s.Send(t.Context(), render(t, r, notice(i, "example.org"))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if c := srv.Connections(); c < 1 || c > 3 {
		t.Errorf("%d connections for Pool 3", c)
	}
	if srv.Total() != 30 {
		t.Errorf("%d messages", srv.Total())
	}
}

func TestSMTPTLS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []smtptest.Option
	}{
		{"starttls", []smtptest.Option{smtptest.WithSTARTTLS()}},
		{"smtps", []smtptest.Option{smtptest.WithImplicitTLS()}},
		{"starttls auth", []smtptest.Option{smtptest.WithSTARTTLS(), smtptest.WithAuth("u", "p@ss")}},
		{"smtps auth", []smtptest.Option{smtptest.WithImplicitTLS(), smtptest.WithAuth("u", "p@ss")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := smtptest.New(t, tt.opts...)
			s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), TLSConfig: srv.ClientTLSConfig(), Helo: "scan.test"})
			m := render(t, newRenderer(t), notice(1, "example.org"))
			if _, err := s.Send(t.Context(), m); err != nil {
				t.Fatal(err)
			}
			if got := srv.Messages(); len(got) != 1 || !got[0].TLS {
				t.Fatalf("messages = %+v, want one over TLS", got)
			}
			// The connection is reused, still encrypted and authenticated.
			if _, err := s.Send(t.Context(), render(t, newRenderer(t), notice(2, "example.org"))); err != nil {
				t.Fatal(err)
			}
			if got := srv.Messages(); len(got) != 2 || !got[1].TLS || srv.Connections() != 1 {
				t.Fatalf("%d messages on %d connections, want 2 on 1", len(got), srv.Connections())
			}
		})
	}
}

func TestSMTPCertificateVerified(t *testing.T) {
	t.Parallel()
	for _, opt := range []smtptest.Option{smtptest.WithSTARTTLS(), smtptest.WithImplicitTLS()} {
		srv := smtptest.New(t, opt)
		s := newSMTP(t, send.SMTPConfig{URL: srv.URL()}) // system roots only
		_, err := s.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org")))
		if send.Classify(err) != send.Transient || srv.Total() != 0 {
			t.Fatalf("untrusted certificate: err = %v, %d messages", err, srv.Total())
		}
	}
}

func TestSMTPAuthRejected(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t, smtptest.WithSTARTTLS(), smtptest.WithAuth("u", "right"))
	url := strings.Replace(srv.URL(), "u:right@", "u:wrong@", 1)
	s := newSMTP(t, send.SMTPConfig{URL: url, TLSConfig: srv.ClientTLSConfig()})
	_, err := s.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org")))
	if !errors.Is(err, send.ErrMisconfigured) || send.Classify(err) != send.Transient {
		t.Fatalf("Send error = %v, want Transient ErrMisconfigured", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("error %q leaks the password", err)
	}
}

func TestNewSMTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  send.SMTPConfig
	}{
		{"empty", send.SMTPConfig{}},
		{"scheme", send.SMTPConfig{URL: "http://u:secret@mail.example.com"}},
		{"no host", send.SMTPConfig{URL: "smtp://u:secret@:25"}},
		{"bad port", send.SMTPConfig{URL: "smtp://u:secret@mail.example.com:99999"}},
		{"unparseable", send.SMTPConfig{URL: "smtp://u:secret@mail.example.com:2x5"}},
		{"negative pool", send.SMTPConfig{URL: "smtp://mail.example.com", Pool: -1}},
		{"helo", send.SMTPConfig{URL: "smtp://mail.example.com", Helo: "a b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := send.NewSMTP(tt.cfg)
			if err == nil {
				t.Fatal("NewSMTP succeeded")
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q leaks the password", err)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"smtp://user:pa55@mail.example.com:587": "smtp://user:xxxxx@mail.example.com:587",
		"smtps://mail.example.com":              "smtps://mail.example.com",
		"https://api.example.com/send?x=1":      "https://api.example.com/send?x=1",
		"smtp://user:pa55@host:bad port":        "[unparseable URL]",
	} {
		if got := send.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
