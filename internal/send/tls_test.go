package send_test

import (
	"crypto/tls"
	"net"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"scan/internal/send"
	"scan/internal/smtptest"
)

// TLS rules not covered by smtp_test.go (trusted and untrusted roots,
// smtps, STARTTLS) and smtp_internal_test.go (STARTTLS required off
// loopback): the certificate's host name is verified too, certificate
// checks cannot be switched off, and a refused STARTTLS never falls back
// to sending the password or the message in the clear.

// A certificate the client trusts, but issued for other names than the
// one the client asked for, is refused: nothing is sent and the password
// does not leak into the error.
func TestSMTPVerifiesTheHostName(t *testing.T) {
	t.Parallel()
	for _, opt := range []smtptest.Option{smtptest.WithSTARTTLS(), smtptest.WithImplicitTLS()} {
		srv := smtptest.New(t, opt, smtptest.WithAuth("scan", "tls-test-password"))
		conf := srv.ClientTLSConfig()
		conf.ServerName = "mail.example.com" // the certificate is for 127.0.0.1, ::1 and localhost
		s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), TLSConfig: conf, Timeout: 10 * time.Second})
		_, err := s.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org")))
		if send.Classify(err) != send.Transient || srv.Total() != 0 {
			t.Fatalf("%s: certificate for another host: err = %v, %d messages", srv.URL(), err, srv.Total())
		}
		if !strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), "tls-test-password") {
			t.Errorf("error %q: want a certificate error without the password", err)
		}
	}
}

// Certificate verification cannot be turned off by configuration.
func TestSMTPRefusesInsecureSkipVerify(t *testing.T) {
	t.Parallel()
	_, err := send.NewSMTP(send.SMTPConfig{URL: "smtps://mail.example.com", TLSConfig: &tls.Config{InsecureSkipVerify: true}}) //nolint:gosec // the point of the test
	if err == nil || !strings.Contains(err.Error(), "InsecureSkipVerify") {
		t.Fatalf("NewSMTP with InsecureSkipVerify: %v", err)
	}
}

// A server (or a man in the middle) that offers STARTTLS and then refuses
// it gets neither the credentials nor the message: the client gives up on
// the connection instead of carrying on in the clear, even on loopback
// where plaintext would otherwise be allowed.
func TestSMTPRefusedSTARTTLSNeverFallsBack(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	after := make(chan []string, 1) // commands received after STARTTLS was refused
	go func() {
		c, err := ln.Accept()
		if err != nil {
			after <- []string{"accept: " + err.Error()}
			return
		}
		defer c.Close()
		tp := textproto.NewConn(c)
		_ = tp.PrintfLine("220 downgrade.test ESMTP")
		var got []string
		refused := false
		for {
			line, err := tp.ReadLine()
			if err != nil {
				after <- got
				return
			}
			cmd := strings.ToUpper(line)
			switch {
			case refused:
				got = append(got, line)
				_ = tp.PrintfLine("250 ok")
			case strings.HasPrefix(cmd, "EHLO"):
				_ = tp.PrintfLine("250-downgrade.test\r\n250-STARTTLS\r\n250 AUTH PLAIN")
			case cmd == "STARTTLS":
				refused = true
				_ = tp.PrintfLine("454 4.7.0 TLS not available")
			default:
				_ = tp.PrintfLine("503 bad sequence")
			}
		}
	}()
	s := newSMTP(t, send.SMTPConfig{URL: "smtp://scan:downgrade-password@" + ln.Addr().String(), Timeout: 10 * time.Second})
	_, err = s.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org")))
	if send.Classify(err) != send.Transient {
		t.Fatalf("Send after a refused STARTTLS: %v, want a transient failure", err)
	}
	if strings.Contains(err.Error(), "downgrade-password") {
		t.Errorf("error %q leaks the password", err)
	}
	// The client closed the connection: the server saw everything.
	for _, line := range <-after {
		if !strings.EqualFold(line, "QUIT") {
			t.Errorf("after the refused STARTTLS the client sent %q in the clear", line)
		}
	}
}
