package send_test

import (
	"fmt"
	"testing"

	"scan/internal/send"
	"scan/internal/smtptest"
)

// BenchmarkFailoverAtLatency: BenchmarkSMTPAtLatency's pass (the
// Dispatcher, 50 ms a reply, 64 connections, 40 messages per connection
// an iteration) through a Failover whose first sender is that SMTP pool
// and whose second is another SMTP server, never needed, as
// SCAN_SENDER=smtp,... builds it. The Failover hands its workers lanes of
// the SMTP sender, so the rate is the plain sender's; x_ideal is against
// concurrency / latency, 1,280 messages a second.
//
//	go test -run '^$' -bench 'SMTPAtLatency|FailoverAtLatency' -benchtime 3x ./internal/send/
func BenchmarkFailoverAtLatency(b *testing.B) {
	srv := smtptest.New(b, smtptest.WithReplyLatency(benchLatency))
	first, err := send.NewSMTP(send.SMTPConfig{URL: srv.URL(), Pool: benchConcurrency})
	if err != nil {
		b.Fatal(err)
	}
	spare := smtptest.New(b)
	second, err := send.NewSMTP(send.SMTPConfig{URL: spare.URL(), Pool: 1})
	if err != nil {
		b.Fatal(err)
	}
	fo, err := send.NewFailover(send.FailoverConfig{Senders: []send.Named{
		{Name: "smtp", Sender: first}, {Name: "spare", Sender: second},
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer fo.Close()
	benchAtLatency(b, fo, srv, func(res send.Result) error {
		if res.Receipt.Sender != "smtp" {
			return fmt.Errorf("sent by %q, want the first sender", res.Receipt.Sender)
		}
		return nil
	})
	if spare.Total() != 0 {
		b.Fatalf("the second sender got %d messages", spare.Total())
	}
}
