package send_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"scan/internal/send"
)

// discard is an SMTP backend that accepts and forgets every message.
type discard struct{}

func (discard) NewSession(*smtp.Conn) (smtp.Session, error) { return discard{}, nil }
func (discard) Mail(string, *smtp.MailOptions) error        { return nil }
func (discard) Rcpt(string, *smtp.RcptOptions) error        { return nil }
func (discard) Reset()                                      {}
func (discard) Logout() error                               { return nil }
func (discard) Data(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}

// benchSMTP sends b.N messages one after the other on one loopback
// connection to a go-smtp server (which offers PIPELINING), through send.
func benchSMTP(b *testing.B, send1 func(s *send.SMTP, l send.Lane, m, next *send.Message) error) {
	srv := smtp.NewServer(discard{})
	srv.Domain = "bench.localhost"
	srv.ReadTimeout, srv.WriteTimeout = time.Minute, time.Minute
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	s, err := send.NewSMTP(send.SMTPConfig{URL: "smtp://" + ln.Addr().String(), Pool: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := newRenderer(b)
	ms := make([]*send.Message, 64)
	for i := range ms {
		ms[i] = render(b, r, notice(i, "example.org"))
	}
	l := s.Lane()
	defer l.Close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := send1(s, l, ms[i%len(ms)], ms[(i+1)%len(ms)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkSMTPSend: one message per Send, waiting for each reply (MAIL,
// RCPT and DATA pipelined together, the content after 354).
func BenchmarkSMTPSend(b *testing.B) {
	benchSMTP(b, func(s *send.SMTP, _ send.Lane, m, _ *send.Message) error {
		_, err := s.Send(b.Context(), m)
		return err
	})
}

// BenchmarkSMTPLane: the same on a Lane, each message's end of data
// carrying the next message's envelope.
func BenchmarkSMTPLane(b *testing.B) {
	benchSMTP(b, func(_ *send.SMTP, l send.Lane, m, next *send.Message) error {
		_, err := l.Send(b.Context(), m, next)
		return err
	})
}
