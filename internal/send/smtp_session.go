package send

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Session setup: connect, TLS (implicit or STARTTLS), EHLO and AUTH, each
// failure Transient since nothing was sent; and the connection wrappers
// that bound a whole send and let go-smtp take over a greeted session.

// dial connects, greets, starts TLS and authenticates. Every failure is
// Transient: nothing was sent.
func (s *SMTP) dial(ctx context.Context, deadline time.Time) (*smtpConn, error) {
	fail := func(stage string, err error) error {
		var se *smtp.SMTPError
		code := 0
		if errors.As(err, &se) {
			code = se.Code
		}
		return &Error{Class: Transient, Code: code, Err: fmt.Errorf("smtp: %s %s: %w", stage, s.redacted, err)}
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, fail("connect", fmt.Errorf("%w: %w", ErrUnreachable, err))
	}
	dc := &deadlineConn{Conn: raw}
	dc.begin(deadline)
	stop := context.AfterFunc(ctx, dc.expire)
	defer stop()

	var conn net.Conn = dc
	if s.implicitTLS {
		tc := tls.Client(dc, s.tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			dc.Close()
			return nil, fail("tls handshake", err)
		}
		conn = tc
	} else {
		conn, err = s.startTLS(ctx, dc)
		if err != nil {
			dc.Close()
			if errors.Is(err, ErrMisconfigured) {
				return nil, &Error{Class: Transient, Err: err}
			}
			return nil, fail("starttls", err)
		}
	}
	c := smtp.NewClient(conn)
	c.CommandTimeout = s.timeout
	c.SubmissionTimeout = s.timeout
	if err := c.Hello(s.helo); err != nil {
		c.Close()
		return nil, fail("ehlo", err)
	}
	if s.hasAuth {
		if ok, _ := c.Extension("AUTH"); !ok {
			c.Close()
			return nil, &Error{Class: Transient, Err: fmt.Errorf("%w: smtp server %s does not offer AUTH", ErrMisconfigured, s.redacted)}
		}
		if err := c.Auth(sasl.NewPlainClient("", s.user, s.pass)); err != nil {
			c.Close()
			var se *smtp.SMTPError
			if errors.As(err, &se) && se.Code >= 500 {
				return nil, &Error{Class: Transient, Code: se.Code, Err: fmt.Errorf("%w: smtp server %s refused the credentials: %s", ErrMisconfigured, s.redacted, se.Message)}
			}
			return nil, fail("auth", err)
		}
	}
	// go-smtp's client has set the session up; the transactions are
	// written here, since it cannot pipeline. Nothing is buffered in it:
	// a server says nothing unasked after its reply to EHLO or AUTH.
	sc := &smtpConn{
		conn: conn,
		dc:   dc,
		lim:  &replyLimit{r: conn},
		w:    bufio.NewWriterSize(conn, smtpWriteBuffer),
	}
	sc.r = textproto.NewReader(bufio.NewReader(sc.lim))
	sc.pipelining, _ = c.Extension("PIPELINING")
	sc.utf8, _ = c.Extension("SMTPUTF8")
	sc.size, _ = c.Extension("SIZE")
	sc.eightBit, _ = c.Extension("8BITMIME")
	return sc, nil
}

// startTLS reads the greeting, says EHLO and, when the server offers it,
// upgrades the connection with STARTTLS. It returns the connection to run
// the session on, primed with a greeting for smtp.NewClient. Without
// STARTTLS it fails with ErrMisconfigured unless the host is loopback.
// go-smtp's own STARTTLS cannot be used: see greetedConn.
func (s *SMTP) startTLS(ctx context.Context, dc *deadlineConn) (net.Conn, error) {
	tp := textproto.NewConn(dc)
	if _, _, err := tp.ReadResponse(220); err != nil {
		return nil, err
	}
	offered := false
	id, err := tp.Cmd("EHLO %s", s.helo)
	if err != nil {
		return nil, err
	}
	tp.StartResponse(id)
	_, msg, err := tp.ReadResponse(250)
	tp.EndResponse(id)
	var te *textproto.Error
	switch {
	case err == nil:
		for _, line := range strings.Split(msg, "\n")[1:] {
			if strings.EqualFold(strings.Fields(line + " x")[0], "STARTTLS") {
				offered = true
			}
		}
	case errors.As(err, &te) && te.Code >= 500:
		// No ESMTP: no STARTTLS either. go-smtp's client falls back to
		// HELO by itself.
	default:
		return nil, err
	}
	if !offered {
		if s.requireTLS {
			return nil, fmt.Errorf("%w: smtp server %s does not offer STARTTLS and is not a loopback host", ErrMisconfigured, s.redacted)
		}
		return &greetedConn{Conn: dc, greeting: strings.NewReader("220 ready\r\n")}, nil
	}
	id, err = tp.Cmd("STARTTLS")
	if err != nil {
		return nil, err
	}
	tp.StartResponse(id)
	_, _, err = tp.ReadResponse(220)
	tp.EndResponse(id)
	if err != nil {
		return nil, err
	}
	if tp.R.Buffered() > 0 {
		return nil, errors.New("server sent data before the TLS handshake")
	}
	tc := tls.Client(dc, s.tlsConfig)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return &greetedConn{Conn: tc, greeting: strings.NewReader("220 ready\r\n")}, nil
}

// deadlineConn caps every deadline that go-smtp sets (it sets one per
// command and clears it after) at the current send's limit, so that the
// whole send, not each command, is bounded.
type deadlineConn struct {
	net.Conn
	mu    sync.Mutex
	limit time.Time
}

func (c *deadlineConn) clamp(t time.Time) time.Time {
	if !c.limit.IsZero() && (t.IsZero() || t.After(c.limit)) {
		return c.limit
	}
	return t
}

// begin starts a send: it sets the cap (zero: none) and applies it at
// once.
func (c *deadlineConn) begin(limit time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = limit
	_ = c.Conn.SetDeadline(limit)
}

// expire moves the cap into the past, failing any blocked read or write at
// once: the send's context has ended.
func (c *deadlineConn) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = time.Unix(1, 0)
	_ = c.Conn.SetDeadline(c.limit)
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.SetDeadline(c.clamp(t))
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.SetReadDeadline(c.clamp(t))
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

// greetedConn replays a greeting before the real stream, so that
// smtp.NewClient can take over a session whose greeting (and STARTTLS)
// was handled here.
//
// Why go-smtp does not run the whole session, its own STARTTLS included
// (checked against go-smtp v0.25.1, client.go): this package must keep
// the session's stream, because the transactions are written on it here
// (smtp_txn.go), not by go-smtp's Client: its Mail, Rcpt and Data each
// wait for their reply (no PIPELINING, no envelope behind the previous
// dot), and DataCommand.Close writes the final dot and reads the reply in
// one call, so a dot that never left (Transient) cannot be told from a
// reply that never came (Unknown). go-smtp's only STARTTLS is
// NewClientStartTLS (or DialStartTLS), which puts the *tls.Conn in the
// unexported Client.conn, with no accessor: after it, the encrypted
// stream is out of reach. So startTLS upgrades the connection itself and
// hands go-smtp the stream for EHLO and AUTH only; and since its Client
// always reads a 220 greeting before its first command (Client.greet) and
// cannot be told that one was read, a "220 ready" is replayed to it.
type greetedConn struct {
	net.Conn
	greeting *strings.Reader
}

func (c *greetedConn) Read(b []byte) (int, error) {
	if c.greeting.Len() > 0 {
		return c.greeting.Read(b)
	}
	return c.Conn.Read(b)
}
