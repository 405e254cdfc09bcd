package send_test

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"scan/internal/send"
	"scan/internal/smtptest"
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

// BenchmarkSMTPAtLatency: the Dispatcher and the SMTP pool at a provider's
// latency, every reply 50 ms after what it answers (smtptest
// WithReplyLatency), 64 connections. A lane sends each message's end of
// data together with the next envelope, so a message costs one round trip
// once the connections are open: the ideal is concurrency / latency, 1,280
// messages a second. Each iteration sends 40 messages per connection
// through a new Dispatcher on the same, already warm, pool; x_ideal is the
// rate against the ideal (the target is at least 0.8).
//
//	go test -run '^$' -bench SMTPAtLatency -benchtime 3x ./internal/send/
func BenchmarkSMTPAtLatency(b *testing.B) {
	srv := smtptest.New(b, smtptest.WithReplyLatency(benchLatency))
	s, err := send.NewSMTP(send.SMTPConfig{URL: srv.URL(), Pool: benchConcurrency})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchAtLatency(b, s, srv, func(send.Result) error { return nil })
}

// The latency benchmarks' pace: every reply 50 ms after what it answers,
// 64 connections, 40 messages per connection an iteration.
const benchLatency, benchConcurrency, benchPerIter = 50 * time.Millisecond, 64, 64 * 40

// benchAtLatency sends benchPerIter notices an iteration through a new
// Dispatcher over s (whose server is srv), each result checked by check,
// and reports msgs/s, x_ideal (against concurrency / latency) and the
// server's connections.
func benchAtLatency(b *testing.B, s send.Sender, srv *smtptest.Server, check func(send.Result) error) {
	r := newRenderer(b)
	ns := make([]send.Notice, benchPerIter)
	for i := range ns {
		ns[i] = notice(i, fmt.Sprintf("d%d.example", i%20))
	}
	sent := 0
	for b.Loop() {
		d := newDispatcher(b, b.Context(), send.DispatcherConfig{Sender: s, Renderer: r, Concurrency: benchConcurrency, MaxQueued: benchPerIter})
		go func() {
			for _, n := range ns {
				if err := d.Submit(b.Context(), n); err != nil {
					b.Error(err)
					break
				}
			}
			d.Close()
		}()
		for res := range d.Results() {
			if res.Err != nil {
				b.Fatal(res.Err)
			}
			if err := check(res); err != nil {
				b.Fatal(err)
			}
			sent++
		}
	}
	rate := float64(sent) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(rate/(benchConcurrency/benchLatency.Seconds()), "x_ideal")
	b.ReportMetric(float64(srv.Connections()), "conns")
}
