package send

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"scan/internal/smtptest"
)

func TestTLSRequired(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost":        false,
		"LOCALHOST":        false,
		"127.0.0.1":        false,
		"127.1.2.3":        false,
		"::1":              false,
		"mail.example.com": true,
		"10.0.0.1":         true,
		"192.168.1.1":      true,
		"localhost.evil":   true,
		"::ffff:8.8.8.8":   true,
	} {
		if got := tlsRequired(host); got != want {
			t.Errorf("tlsRequired(%q) = %v, want %v", host, got, want)
		}
	}
}

// A non-loopback server that does not offer STARTTLS is refused before
// anything is sent.
func TestSMTPRequiresTLS(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	s, err := NewSMTP(SMTPConfig{URL: srv.URL(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.requireTLS = true // as if the host were not loopback
	m := &Message{From: "a@example.com", MessageID: "<x@y.z>", Raw: []byte("Subject: x\r\n\r\nx\r\n")}
	m.Notice.To = "b@example.org"
	_, err = s.Send(t.Context(), m)
	if !errors.Is(err, ErrMisconfigured) || Classify(err) != Transient {
		t.Fatalf("Send error = %v, want Transient ErrMisconfigured", err)
	}
	if srv.Total() != 0 {
		t.Fatal("a message was sent in the clear")
	}

	// With STARTTLS offered, the same requirement is met.
	tsrv := smtptest.New(t, smtptest.WithSTARTTLS())
	s2, err := NewSMTP(SMTPConfig{URL: tsrv.URL(), TLSConfig: tsrv.ClientTLSConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	s2.requireTLS = true
	if _, err := s2.Send(t.Context(), m); err != nil {
		t.Fatal(err)
	}
}

func TestWriteDotted(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"":                         ".\r\n",
		"a\r\n":                    "a\r\n.\r\n",
		"a":                        "a\r\n.\r\n",
		".a\r\n..b\r\nc.\r\n":      "..a\r\n...b\r\nc.\r\n.\r\n",
		"a\nb\r\n.\n":              "a\r\nb\r\n..\r\n.\r\n",
		"Subject: x\r\n\r\n.\r\n.": "Subject: x\r\n\r\n..\r\n..\r\n.\r\n",
	} {
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		if err := writeDotted(w, []byte(raw)); err != nil {
			t.Fatal(err)
		}
		_ = w.Flush()
		if b.String() != want {
			t.Errorf("writeDotted(%q) = %q, want %q", raw, b.String(), want)
		}
	}
}

func TestStripEnhanced(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"2.0.0 Ok: queued as 12": "Ok: queued as 12",
		"Ok: queued":             "Ok: queued",
		"2.0 Ok":                 "2.0 Ok",
		"a.b.c Ok":               "a.b.c Ok",
		"":                       "",
	} {
		if got := stripEnhanced(in); got != want {
			t.Errorf("stripEnhanced(%q) = %q, want %q", in, got, want)
		}
	}
}

// failingConn answers with replies and accepts the writes before the
// last one whole; the last one takes only accept bytes and fails.
type failingConn struct {
	net.Conn
	replies io.Reader
	writes  int // the write that fails, counted from 1
	accept  int
	n       int
}

func (c *failingConn) Read(b []byte) (int, error) { return c.replies.Read(b) }
func (c *failingConn) Close() error               { return nil }
func (c *failingConn) Write(b []byte) (int, error) {
	c.n++
	if c.n < c.writes {
		return len(b), nil
	}
	return min(c.accept, len(b)), errors.New("connection reset")
}

// A write that fails after the message's content: the message is
// Transient (never reached the server, safe to send again) only when the
// final dot did not leave; once it left, the server may have taken the
// message, and it is Unknown, even though the write failed, because the
// next message's envelope behind it did not leave whole.
func TestFailedWriteAfterContent(t *testing.T) {
	t.Parallel()
	m := &Message{From: "a@example.com", MessageID: "<1@x>", Raw: []byte("Subject: x\r\n\r\n.body\r\n")}
	m.Notice.To = "b@example.org"
	next := &Message{From: "a@example.com", MessageID: "<2@x>", Raw: []byte("Subject: y\r\n\r\ny\r\n")}
	next.Notice.To = "c@example.org"
	var dotted bytes.Buffer
	w := bufio.NewWriter(&dotted)
	_ = writeDotted(w, m.Raw)
	_ = w.Flush()
	content := dotted.Len()
	envLen := (&smtpConn{}).envelopeLen(next)
	for _, tc := range []struct {
		next   *Message
		accept int
		want   Class
	}{
		{nil, 0, Transient},
		{nil, content - 1, Transient}, // the dot's LF is missing
		{next, content - 1, Transient},
		{next, content, Unknown}, // the dot left, the envelope did not
		{next, content + envLen - 1, Unknown},
	} {
		fc := &failingConn{replies: strings.NewReader("250 ok\r\n250 ok\r\n354 go on\r\n"), writes: 2, accept: tc.accept}
		c := &smtpConn{conn: fc, dc: &deadlineConn{Conn: fc}, lim: &replyLimit{r: fc}, w: bufio.NewWriterSize(fc, smtpWriteBuffer), pipelining: true}
		c.r = textproto.NewReader(bufio.NewReader(c.lim))
		_, state, err := c.transact(m, tc.next)
		if Classify(err) != tc.want || state != connDrop || c.pending != nil {
			t.Errorf("next %v, %d of %d bytes written: %v, state %d, pending %v; want %s, dropped, none pending",
				tc.next != nil, tc.accept, content, err, state, c.pending != nil, tc.want)
		}
	}
}

// One loopback test for the command and the sender: the host's case does
// not matter (smtp://LOCALHOST was refused by the command and accepted by
// the sender when each had its own).
func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "LocalHost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"localhost.example.com": false, "mail.example.com": false, "10.0.0.1": false, "": false, "0.0.0.0": false,
	} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
		if tlsRequired(host) == want {
			t.Errorf("tlsRequired(%q) = %v, want %v", host, !want, !want)
		}
	}
}
