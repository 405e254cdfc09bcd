package send_test

import (
	"fmt"
	"testing"
	"time"

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
	const latency, concurrency, perIter = 50 * time.Millisecond, 64, 64 * 40
	srv := smtptest.New(b, smtptest.WithReplyLatency(latency))
	first, err := send.NewSMTP(send.SMTPConfig{URL: srv.URL(), Pool: concurrency})
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
	r := newRenderer(b)
	ns := make([]send.Notice, perIter)
	for i := range ns {
		ns[i] = notice(i, fmt.Sprintf("d%d.example", i%20))
	}
	sent := 0
	for b.Loop() {
		d := newDispatcher(b, b.Context(), send.DispatcherConfig{Sender: fo, Renderer: r, Concurrency: concurrency, MaxQueued: perIter})
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
			if res.Err != nil || res.Receipt.Sender != "smtp" {
				b.Fatalf("%+v: %v", res.Receipt, res.Err)
			}
			sent++
		}
	}
	if spare.Total() != 0 {
		b.Fatalf("the second sender got %d messages", spare.Total())
	}
	rate := float64(sent) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(rate/(concurrency/latency.Seconds()), "x_ideal")
	b.ReportMetric(float64(srv.Connections()), "conns")
}
