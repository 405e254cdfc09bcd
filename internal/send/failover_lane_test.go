package send_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"scan/internal/send"
	"scan/internal/smtptest"
)

// newFailover is a Failover over senders named "a", "b", ... in order,
// closed when the test ends.
func newFailover(t *testing.T, failAfter int, senders ...send.Sender) *send.Failover {
	t.Helper()
	var named []send.Named
	for i, s := range senders {
		named = append(named, send.Named{Name: string(rune('a' + i)), Sender: s})
	}
	fo, err := send.NewFailover(send.FailoverConfig{Senders: named, FailAfter: failAfter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fo.Close() })
	return fo
}

// A lane of a Failover whose first sender pipelines sends each message's
// end of data and the next message's envelope in one write, on one
// connection, as the SMTP sender's own lane does.
func TestFailoverLanePipelinesThroughItsFirstSender(t *testing.T) {
	t.Parallel()
	a := newRawServer(t, true)
	b := smtptest.New(t)
	fo := newFailover(t, 1,
		newSMTP(t, send.SMTPConfig{URL: a.URL(), Pool: 1}),
		newSMTP(t, send.SMTPConfig{URL: b.URL(), Pool: 1}))
	var p send.Sender = fo
	if _, ok := p.(send.Pipeliner); !ok {
		t.Fatal("a Failover is not a Pipeliner")
	}
	l := fo.Lane()
	rs := sendInOrder(t, l, renderN(t, 6))
	l.Close()
	l.Close() // a second Close does nothing
	messages, conns, piggybacked, _ := a.counts()
	if messages != 6 || conns != 1 || piggybacked != 5 {
		t.Fatalf("messages %d, connections %d, envelopes behind a message %d; want 6, 1, 5", messages, conns, piggybacked)
	}
	for i, r := range rs {
		if r.Sender != "a" || r.ProviderID != fmt.Sprint(i+1) {
			t.Errorf("message %d: receipt %+v, want sender a, ProviderID %d", i, r, i+1)
		}
	}
	if b.Total() != 0 {
		t.Errorf("the second sender got %d messages", b.Total())
	}
}

// Batches pipelined by the Dispatcher's workers through a Failover reach
// the server once each, through the first sender.
func TestFailoverPipelinedBatchesReachTheServerOnce(t *testing.T) {
	t.Parallel()
	const n = 120
	a, b := smtptest.New(t), smtptest.New(t)
	fo := newFailover(t, 0,
		newSMTP(t, send.SMTPConfig{URL: a.URL(), Pool: 4}),
		newSMTP(t, send.SMTPConfig{URL: b.URL(), Pool: 4}))
	d := newDispatcher(t, t.Context(), send.DispatcherConfig{Sender: fo, Renderer: newRenderer(t), Concurrency: 4, MaxQueued: n})
	go func() {
		for i := range n {
			if err := d.Submit(t.Context(), notice(i, fmt.Sprintf("d%d.example", i%7))); err != nil {
				t.Error(err)
				break
			}
		}
		d.Close()
	}()
	got := 0
	for res := range d.Results() {
		if res.Err != nil {
			t.Fatalf("notice %v: %v", res.Notice.Key, res.Err)
		}
		if res.Receipt.Sender != "a" {
			t.Errorf("notice %v taken by %q", res.Notice.Key, res.Receipt.Sender)
		}
		got++
	}
	if got != n || a.Total() != n || b.Total() != 0 {
		t.Fatalf("results %d, first server %d, second %d; want %d, %d, 0", got, a.Total(), b.Total(), n, n)
	}
	for _, m := range a.Messages() {
		if c := a.Count(m.MessageID); c != 1 {
			t.Errorf("%s reached the server %d times", m.MessageID, c)
		}
	}
	if a.Connections() > 4 {
		t.Errorf("%d connections to the first server, pool is 4", a.Connections())
	}
}

// A message refused by the first sender in a way that proves nothing was
// handed over (credentials refused) goes through the next sender at
// once, as a single Send's does, and the lane pipelines there.
func TestFailoverLaneRefusedMessageMovesOn(t *testing.T) {
	t.Parallel()
	a := smtptest.New(t, smtptest.WithSTARTTLS(), smtptest.WithAuth("u", "right"))
	b := newRawServer(t, true)
	fo := newFailover(t, 0,
		newSMTP(t, send.SMTPConfig{URL: strings.Replace(a.URL(), "u:right@", "u:wrong@", 1), TLSConfig: a.ClientTLSConfig()}),
		newSMTP(t, send.SMTPConfig{URL: b.URL(), Pool: 1}))
	l := fo.Lane()
	defer l.Close()
	rs := sendInOrder(t, l, renderN(t, 5))
	for i, r := range rs {
		if r.Sender != "b" {
			t.Errorf("message %d taken by %q, want b", i, r.Sender)
		}
	}
	messages, conns, piggybacked, _ := b.counts()
	if messages != 5 || conns != 1 || piggybacked != 4 || a.Total() != 0 {
		t.Fatalf("second: messages %d, connections %d, piggybacked %d; first %d; want 5, 1, 4; 0", messages, conns, piggybacked, a.Total())
	}
	if fo.Current() != "b" {
		t.Errorf("current %q", fo.Current())
	}
}

// Mid-batch: one lane holds the next message's envelope on the first
// sender's connection when another worker finds that sender unreachable
// and the Failover moves on. The held envelope is abandoned (no content
// had left) and that message goes through the next sender, once.
func TestFailoverLaneAbandonsItsEnvelopeWhenAnotherMovesOn(t *testing.T) {
	t.Parallel()
	a := newRawServer(t, true)
	b := smtptest.New(t)
	fo := newFailover(t, 1,
		newSMTP(t, send.SMTPConfig{URL: a.URL(), Pool: 2}),
		newSMTP(t, send.SMTPConfig{URL: b.URL(), Pool: 2}))
	ms := renderN(t, 3)
	l1, l2 := fo.Lane(), fo.Lane()
	defer l1.Close()
	defer l2.Close()
	if r, err := l1.Send(t.Context(), ms[0], ms[1]); err != nil || r.Sender != "a" {
		t.Fatalf("message 0: %+v, %v", r, err)
	}
	_ = a.ln.Close() // the first sender's server refuses new connections
	r, err := l2.Send(t.Context(), ms[2], nil)
	if err != nil || r.Sender != "b" {
		t.Fatalf("message 2 (refused by a): %+v, %v; want it through b", r, err)
	}
	if r, err := l1.Send(t.Context(), ms[1], nil); err != nil || r.Sender != "b" {
		t.Fatalf("message 1 (announced to a): %+v, %v; want it through b", r, err)
	}
	if messages, _, _, _ := a.counts(); messages != 1 {
		t.Errorf("first server has %d messages, want 1", messages)
	}
	for i, m := range ms[1:] {
		if c := b.Count(m.MessageID); c != 1 {
			t.Errorf("message %d reached the second server %d times", i+1, c)
		}
	}
}

// An ambiguous outcome (the server read the message and dropped the
// connection without a reply) never goes to the next sender, even with
// FailAfter 1, on a lane as on Send; nor does it move the Failover.
func TestFailoverLaneNeverMovesAnAmbiguousOutcome(t *testing.T) {
	t.Parallel()
	a := smtptest.New(t, smtptest.WithMode(smtptest.CloseAfterData))
	b := smtptest.New(t)
	fo := newFailover(t, 1,
		newSMTP(t, send.SMTPConfig{URL: a.URL(), Pool: 1}),
		newSMTP(t, send.SMTPConfig{URL: b.URL(), Pool: 1}))
	ms := renderN(t, 4)
	l := fo.Lane()
	defer l.Close()
	for i, m := range ms {
		var next *send.Message
		if i+1 < len(ms) {
			next = ms[i+1]
		}
		_, err := l.Send(t.Context(), m, next)
		var se *send.Error
		if !errors.As(err, &se) || send.Classify(err) != send.Unknown || send.SenderOf(err) != "a" {
			t.Fatalf("message %d: class %s from %q: %v; want Unknown from a", i, send.Classify(err), send.SenderOf(err), err)
		}
		if c := a.Count(m.MessageID); c != 1 {
			t.Errorf("message %d reached the first server %d times", i, c)
		}
	}
	if b.Total() != 0 || fo.Current() != "a" {
		t.Fatalf("second server got %d messages, current %q; want 0, a", b.Total(), fo.Current())
	}
}
