package send_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"scan/internal/send"
	"scan/internal/smtptest"
)

// rawServer is a hand-written SMTP server that sees how commands arrive:
// whether the next message's MAIL was already there when the end of a
// message was read (pipelined behind it), and whether, without
// PIPELINING on offer, any command came before the reply to the one
// before it.
type rawServer struct {
	t          *testing.T
	ln         net.Listener
	pipelining bool
	hugeReply  bool // answer MAIL with one endless line

	mu          sync.Mutex
	messages    [][]byte
	conns       int
	piggybacked int // ends of data with the next MAIL in the same read
	early       int // commands sent before the previous reply, unoffered
}

func newRawServer(t *testing.T, pipelining bool, opts ...func(*rawServer)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{t: t, ln: ln, pipelining: pipelining}
	for _, o := range opts {
		o(s)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			wg.Go(func() { s.serve(c) })
		}
	})
	return s
}

func (s *rawServer) URL() string { return "smtp://" + s.ln.Addr().String() }

func (s *rawServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 1<<20)
	r := textproto.NewReader(br)
	reply := func(lines ...string) bool {
		if !s.pipelining && br.Buffered() > 0 {
			s.mu.Lock()
			s.early++
			s.mu.Unlock()
		}
		_, err := fmt.Fprint(c, strings.Join(lines, "\r\n")+"\r\n")
		return err == nil
	}
	if !reply("220 raw ready") {
		return
	}
	for {
		line, err := r.ReadLine()
		if err != nil {
			return
		}
		verb, _, _ := strings.Cut(strings.ToUpper(line), " ")
		switch verb {
		case "EHLO":
			if s.pipelining {
				reply("250-raw", "250-PIPELINING", "250 SIZE")
			} else {
				reply("250-raw", "250 SIZE")
			}
		case "MAIL":
			if s.hugeReply {
				// 4 MiB of one line, or until the client hangs up.
				chunk := strings.Repeat("x", 64<<10)
				if _, err := fmt.Fprint(c, "250 "); err != nil {
					return
				}
				for range 64 {
					if _, err := fmt.Fprint(c, chunk); err != nil {
						return
					}
				}
				return
			}
			reply("250 2.0.0 ok")
		case "RSET", "NOOP":
			reply("250 2.0.0 ok")
		case "RCPT":
			reply("251 2.1.5 not local, will forward")
		case "DATA":
			if !reply("354 go ahead") {
				return
			}
			body, err := r.ReadDotBytes()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.messages = append(s.messages, body)
			n := len(s.messages)
			if next, err := br.Peek(min(br.Buffered(), 4)); err == nil && string(next) == "MAIL" {
				s.piggybacked++
			}
			s.mu.Unlock()
			reply(fmt.Sprintf("250 2.0.0 Ok: queued as %d", n))
		case "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 5.5.1 unknown command")
		}
	}
}

func (s *rawServer) counts() (messages, conns, piggybacked, early int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.messages), s.conns, s.piggybacked, s.early
}

func renderN(t *testing.T, n int) []*send.Message {
	t.Helper()
	r := newRenderer(t)
	var ms []*send.Message
	for i := range n {
		ms = append(ms, render(t, r, notice(i, "example.org")))
	}
	return ms
}

// sendInOrder sends ms on one lane, each announcing the one after it.
func sendInOrder(t *testing.T, l send.Lane, ms []*send.Message) []send.Receipt {
	t.Helper()
	var rs []send.Receipt
	for i, m := range ms {
		var next *send.Message
		if i+1 < len(ms) {
			next = ms[i+1]
		}
		r, err := l.Send(t.Context(), m, next)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// With PIPELINING offered, a lane sends each message's end of data and
// the next message's envelope in one write, on one connection, and the
// content arrives intact.
func TestLanePipelinesTheNextEnvelope(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, true)
	s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1})
	ms := renderN(t, 4)
	l := s.Lane()
	rs := sendInOrder(t, l, ms)
	l.Close()
	messages, conns, piggybacked, _ := srv.counts()
	if messages != 4 || conns != 1 || piggybacked != 3 {
		t.Fatalf("messages %d, connections %d, envelopes behind a message %d; want 4, 1, 3", messages, conns, piggybacked)
	}
	for i, m := range ms {
		// ReadDotBytes gives lines ending in LF.
		if got, want := string(srv.messages[i]), strings.ReplaceAll(string(m.Raw), "\r\n", "\n"); got != want {
			t.Errorf("message %d arrived as\n%q\nwant\n%q", i, got, want)
		}
		if want := fmt.Sprint(i + 1); rs[i].ProviderID != want {
			t.Errorf("ProviderID %q, want %q (the id after \"queued as\")", rs[i].ProviderID, want)
		}
	}
}

// Without PIPELINING on offer, the client waits for every reply.
func TestSMTPWithoutPipeliningWaitsForEachReply(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, false)
	s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1})
	l := s.Lane()
	defer l.Close()
	sendInOrder(t, l, renderN(t, 3))
	messages, conns, piggybacked, early := srv.counts()
	if messages != 3 || conns != 1 || piggybacked != 0 || early != 0 {
		t.Fatalf("messages %d, connections %d, pipelined %d, commands before their turn %d; want 3, 1, 0, 0", messages, conns, piggybacked, early)
	}
}

// A server that answers with an endless line is cut off at maxReplies
// bytes: a Transient failure (nothing was handed over), not a read into
// memory until the timeout.
func TestSMTPEndlessReply(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, true, func(s *rawServer) { s.hugeReply = true })
	s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1, Timeout: time.Minute})
	_, err := s.Send(t.Context(), renderN(t, 1)[0])
	if send.Classify(err) != send.Transient || !strings.Contains(err.Error(), "replies exceed") {
		t.Fatalf("Send error = %v, want Transient, replies exceed", err)
	}
}

// A lane given another message than the one it announced abandons the
// announced envelope: that message is not delivered, and the connection
// it held (Pool is 1) is free again.
func TestLaneAbandonsAnAnnouncedEnvelope(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1, Timeout: 5 * time.Second})
	ms := renderN(t, 3)
	l := s.Lane()
	defer l.Close()
	if _, err := l.Send(t.Context(), ms[0], ms[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Send(t.Context(), ms[2], nil); err != nil {
		t.Fatal(err)
	}
	if srv.Count(ms[1].MessageID) != 0 || srv.Total() != 2 {
		t.Fatalf("abandoned message delivered %d times, %d in all; want 0, 2", srv.Count(ms[1].MessageID), srv.Total())
	}
	// Announced and then closed: the slot comes back.
	if _, err := l.Send(t.Context(), ms[0], ms[1]); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l.Close()
	if _, err := s.Send(t.Context(), ms[1]); err != nil {
		t.Fatalf("Send after Close: %v", err)
	}
	if srv.Count(ms[1].MessageID) != 1 {
		t.Fatalf("message delivered %d times, want 1", srv.Count(ms[1].MessageID))
	}
}

// When the first message fails, the announced one still goes out once: on
// the same connection after a refusal of the content (the envelope's
// replies are read in step), on a new one after the connection was lost
// with the first message handed over (Unknown; the announced envelope
// carried no content).
func TestLaneFirstFailsThenNext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode  smtptest.Mode
		class send.Class
		code  int
		conns int
	}{
		{smtptest.PermFailData, send.Permanent, 554, 1},
		{smtptest.CloseAfterData, send.Unknown, 0, 2},
	} {
		srv := smtptest.New(t, smtptest.WithMode(tc.mode))
		s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1, Timeout: 5 * time.Second})
		ms := renderN(t, 2)
		l := s.Lane()
		_, err := l.Send(t.Context(), ms[0], ms[1])
		var se *send.Error
		if !errors.As(err, &se) || se.Class != tc.class || se.Code != tc.code {
			t.Fatalf("mode %d: first message: %v, want %s %d", tc.mode, err, tc.class, tc.code)
		}
		srv.SetMode(smtptest.Accept)
		if _, err := l.Send(t.Context(), ms[1], nil); err != nil {
			t.Fatalf("mode %d: %v", tc.mode, err)
		}
		l.Close()
		if srv.Count(ms[1].MessageID) != 1 || srv.Connections() != tc.conns {
			t.Fatalf("mode %d: second message delivered %d times over %d connections; want 1, %d", tc.mode, srv.Count(ms[1].MessageID), srv.Connections(), tc.conns)
		}
	}
}

// fakeLanes is a Pipeliner that checks how the Dispatcher uses its lanes.
type fakeLanes struct {
	t    *testing.T
	send func(m *send.Message) (send.Receipt, error)

	mu                  sync.Mutex
	sends, overlaps     int
	opened, closed      int
	sent                map[string]int
	brokenAnnouncements int
}

func (f *fakeLanes) Send(context.Context, *send.Message) (send.Receipt, error) {
	f.t.Error("Dispatcher called Send on a Pipeliner")
	return send.Receipt{}, nil
}
func (f *fakeLanes) Close() error { return nil }
func (f *fakeLanes) Lane() send.Lane {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened++
	return &fakeLane{f: f}
}

type fakeLane struct {
	f         *fakeLanes
	announced *send.Message
	closed    bool
}

func (l *fakeLane) Send(_ context.Context, m, next *send.Message) (send.Receipt, error) {
	f := l.f
	f.mu.Lock()
	if l.announced != nil && l.announced != m {
		f.brokenAnnouncements++
	}
	l.announced = next
	f.sends++
	if next != nil {
		f.overlaps++
	}
	if f.sent == nil {
		f.sent = map[string]int{}
	}
	f.sent[m.MessageID]++
	f.mu.Unlock()
	return f.send(m)
}

func (l *fakeLane) Close() {
	if l.closed {
		return
	}
	l.closed = true
	l.f.mu.Lock()
	l.f.closed++
	l.f.mu.Unlock()
}

// With a Pipeliner, each worker announces the notice it will send next
// and sends it next; every notice is sent once and has one Result, and
// every lane is closed.
func TestDispatcherPipelinesOnLanes(t *testing.T) {
	t.Parallel()
	f := &fakeLanes{t: t, send: func(*send.Message) (send.Receipt, error) {
		return send.Receipt{ProviderID: "ok"}, nil
	}}
	d := newDispatcher(t, t.Context(), send.DispatcherConfig{Sender: f, Concurrency: 2})
	results := collect(d)
	var ns []send.Notice
	for i := range 500 {
		ns = append(ns, notice(i, fmt.Sprintf("d%d.example", i%3)))
	}
	submitAll(t, d, ns)
	d.Close()
	rs := byKey(t, ns, <-results)
	for _, r := range rs {
		if r.Err != nil || r.Attempts != 1 {
			t.Fatalf("Result %+v", r)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sends != len(ns) || len(f.sent) != len(ns) {
		t.Fatalf("%d sends of %d messages, want %d of %d", f.sends, len(f.sent), len(ns), len(ns))
	}
	if f.brokenAnnouncements != 0 {
		t.Fatalf("%d sends were not of the message announced before them", f.brokenAnnouncements)
	}
	if f.opened != 2 || f.closed != 2 {
		t.Fatalf("lanes opened %d, closed %d; want 2, 2", f.opened, f.closed)
	}
	if f.overlaps == 0 {
		t.Fatal("no send announced its successor")
	}
	t.Logf("%d of %d sends announced the next", f.overlaps, f.sends)
}

// A notice a worker took ahead is not sent once the run is cancelled.
func TestDispatcherPipelinedCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	release := make(chan struct{})
	f := &fakeLanes{t: t}
	f.send = func(*send.Message) (send.Receipt, error) {
		close(started) // a second send panics the test
		<-release
		return send.Receipt{ProviderID: "ok"}, nil
	}
	if sent, notAttempted := cancelDuringSend(t, f, started, release); sent != 1 || notAttempted != 5 {
		t.Fatalf("sent %d, not attempted %d; want 1, 5", sent, notAttempted)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed != 1 {
		t.Fatalf("lanes closed %d, want 1", f.closed)
	}
}
