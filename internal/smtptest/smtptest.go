// Package smtptest runs an in-process SMTP server for tests and benchmarks.
//
// New starts a server on 127.0.0.1 at a random port that records every
// message it receives and answers according to a Mode the test can change at
// any time: accept, fail temporarily or permanently at RCPT or at the end of
// DATA, hang after DATA, or drop the connection after DATA. It can offer
// STARTTLS or implicit TLS with a self-signed certificate (CertPool gives the
// client its root), and can require AUTH PLAIN.
//
// Tests synchronise on Wait or on the Received channel, never on sleeps.
// The server stops when the test ends. All methods are safe for concurrent
// use.
package smtptest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/mail"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"scan/internal/notice"
)

// Mode says how the server answers a message.
type Mode int32

const (
	// Accept replies 250 at the end of DATA.
	Accept Mode = iota
	// TempFailRcpt replies 451 to RCPT TO.
	TempFailRcpt
	// TempFailData reads the message, then replies 451.
	TempFailData
	// PermFailRcpt replies 550 to RCPT TO.
	PermFailRcpt
	// PermFailData reads the message, then replies 554.
	PermFailData
	// HangAfterData reads and records the message, then sends no reply
	// until Release is called or the test ends.
	HangAfterData
	// CloseAfterData reads and records the message, then closes the
	// connection without replying.
	CloseAfterData
)

// Received is one message the server read in full.
type Received struct {
	From      string   // envelope sender
	To        []string // envelope recipients
	MessageID string   // Message-ID header without angle brackets; "" if none
	Raw       []byte   // the message as received (CRLF line endings)
	TLS       bool     // whether the connection was encrypted
	Conn      int      // number of the connection it came on, from 1
}

// Option configures New.
type Option func(*options)

type options struct {
	startTLS    bool
	implicitTLS bool
	user, pass  string
	latency     time.Duration
	rtt         time.Duration
	mode        Mode
	onMessage   func(Received)
	reply       func(Received) string
}

// WithSTARTTLS makes the server offer STARTTLS with a self-signed
// certificate for 127.0.0.1, ::1 and localhost.
func WithSTARTTLS() Option { return func(o *options) { o.startTLS = true } }

// WithImplicitTLS makes the server speak TLS from the first byte (smtps).
func WithImplicitTLS() Option { return func(o *options) { o.implicitTLS = true } }

// WithAuth makes the server offer AUTH PLAIN and refuse MAIL FROM until the
// client has authenticated as user with pass.
func WithAuth(user, pass string) Option {
	return func(o *options) { o.user, o.pass = user, pass }
}

// WithLatency delays every reply to the end of DATA by d, to model a real
// server in benchmarks.
func WithLatency(d time.Duration) Option { return func(o *options) { o.latency = d } }

// WithReplyLatency delays every reply, the greeting included, until d
// after the bytes it answers arrived, as a network round trip of d would
// look to the client: commands that arrive together (pipelined) are
// answered together after d, not one d after the other. Each connection
// waits on its own; other sessions go on meanwhile. It models a provider
// across a region in benchmarks; WithLatency adds the server's own time to
// accept a message on top.
func WithReplyLatency(d time.Duration) Option { return func(o *options) { o.rtt = d } }

// WithMode sets the initial Mode; the default is Accept.
func WithMode(m Mode) Option { return func(o *options) { o.mode = m } }

// OnMessage calls fn, on the connection's goroutine, for each message read
// in full, before it is counted and before the server replies to it.
func OnMessage(fn func(Received)) Option { return func(o *options) { o.onMessage = fn } }

// WithReply makes the server answer an accepted message with "250 " and
// the text fn returns for it (no enhanced status code), as providers that
// put their message id in the reply do: "Ok <id>" (Amazon SES), "Ok:
// queued as <id>" (Postfix, SendGrid). The default is "250 2.0.0 OK:
// queued".
func WithReply(fn func(Received) string) Option { return func(o *options) { o.reply = fn } }

// Server is a running test SMTP server. Its zero value is not usable; call
// New.
type Server struct {
	t        testing.TB
	opts     options
	srv      *smtp.Server
	addr     string
	scheme   string
	pool     *x509.CertPool
	mode     atomic.Int32
	done     chan struct{} // closed when the test ends
	received chan Received

	mu      sync.Mutex
	msgs    []Received
	changed chan struct{} // closed and replaced on every message
	release chan struct{} // closed by Release
	relOnce sync.Once
	byConn  map[*smtp.Conn]int // connection number, from 1
	open    int                // sessions begun and not ended
}

// New starts a server for the duration of t. It fails t if it cannot listen.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		t:        t,
		done:     make(chan struct{}),
		received: make(chan Received, 4096),
		changed:  make(chan struct{}),
		release:  make(chan struct{}),
		scheme:   "smtp",
		byConn:   map[*smtp.Conn]int{},
	}
	for _, o := range opts {
		o(&s.opts)
	}
	s.mode.Store(int32(s.opts.mode))

	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = "smtptest.localhost"
	srv.AllowInsecureAuth = true
	srv.EnableSMTPUTF8 = true
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute

	var tlsConf *tls.Config
	if s.opts.startTLS || s.opts.implicitTLS {
		cert, pool, err := selfSigned()
		if err != nil {
			t.Fatalf("smtptest: certificate: %v", err)
		}
		s.pool = pool
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if s.opts.startTLS {
		srv.TLSConfig = tlsConf
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("smtptest: listen: %v", err)
	}
	if s.opts.rtt > 0 {
		// Under TLS, so that the handshake pays its round trips too.
		ln = latencyListener{Listener: ln, d: s.opts.rtt, done: s.done}
	}
	if s.opts.implicitTLS {
		ln = tls.NewListener(ln, tlsConf)
		s.scheme = "smtps"
	}
	s.addr = ln.Addr().String()
	s.srv = srv
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		close(s.done)
		_ = srv.Close()
		// go-smtp's Close closes only the listeners Serve has registered:
		// a test that ends before the goroutine above reached Serve would
		// leave it accepting for ever, and this cleanup waiting on it.
		// Closing the listener ourselves ends Serve either way.
		_ = ln.Close()
		<-served
	})
	return s
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.addr }

// URL returns smtp://127.0.0.1:port (smtps:// with implicit TLS), with the
// user and password of WithAuth when set.
func (s *Server) URL() string {
	if s.opts.user != "" {
		return fmt.Sprintf("%s://%s:%s@%s", s.scheme, s.opts.user, s.opts.pass, s.addr)
	}
	return s.scheme + "://" + s.addr
}

// CertPool returns a pool holding the server's certificate, for a client's
// tls.Config RootCAs; nil without TLS.
func (s *Server) CertPool() *x509.CertPool { return s.pool }

// ClientTLSConfig returns a client configuration that trusts the server.
func (s *Server) ClientTLSConfig() *tls.Config {
	return &tls.Config{RootCAs: s.pool, MinVersion: tls.VersionTLS12}
}

// SetMode changes how the server answers from the next command on.
func (s *Server) SetMode(m Mode) { s.mode.Store(int32(m)) }

// Release ends every current and future HangAfterData wait; each then
// replies 451. Calling it again does nothing.
func (s *Server) Release() { s.relOnce.Do(func() { close(s.release) }) }

// Connections returns how many connections have started an SMTP session
// (said EHLO or HELO).
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byConn)
}

// Total returns how many messages the server has read in full.
func (s *Server) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// Count returns how many received messages carry Message-ID msgID, given
// with or without angle brackets.
func (s *Server) Count(msgID string) int {
	id := notice.BareMessageID(msgID)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.msgs {
		if m.MessageID == id {
			n++
		}
	}
	return n
}

// Messages returns a copy of every message received so far, in order.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.msgs...)
}

// Received returns a channel that gets each message as it is read in full,
// before the reply. It buffers 4096 messages; beyond that, messages are
// still recorded but no longer signalled here (use Wait).
func (s *Server) Received() <-chan Received { return s.received }

// Wait blocks until the server has received at least n messages, ctx ends
// or the test ends.
func (s *Server) Wait(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, ch := len(s.msgs), s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("smtptest: %d of %d messages: %w", got, n, ctx.Err())
		case <-s.done:
			return errors.New("smtptest: test ended")
		}
	}
}

// DropConnections closes every open connection without a word, as a
// server does to connections idle too long.
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.byConn {
		_ = c.Conn().Close()
	}
}

// Idle blocks until no session is open, ctx ends or the test ends. After
// a client was killed, it returns once the server has read everything
// that had left the client: the kernel closes a killed process's
// connections, and each session ends when its server has read to the end.
func (s *Server) Idle(ctx context.Context) error {
	for {
		s.mu.Lock()
		open, ch := s.open, s.changed
		s.mu.Unlock()
		if open == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("smtptest: %d sessions still open: %w", open, ctx.Err())
		case <-s.done:
			return errors.New("smtptest: test ended")
		}
	}
}

// changedLocked wakes Wait and Idle. s.mu is held.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) record(r Received) {
	if s.opts.onMessage != nil {
		s.opts.onMessage(r)
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, r)
	s.changedLocked()
	s.mu.Unlock()
	select {
	case s.received <- r:
	default:
	}
}

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	// A connection gets a new session after STARTTLS: number the
	// connection, not the session.
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.byConn[c]
	if !ok {
		n = len(s.byConn) + 1
		s.byConn[c] = n
	}
	s.open++
	return &session{s: s, c: c, conn: n}, nil
}

// session is one SMTP connection's state.
type session struct {
	s      *Server
	c      *smtp.Conn
	conn   int
	authed bool
	from   string
	to     []string
}

var _ smtp.AuthSession = (*session)(nil)

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if ss.s.opts.user == "" || mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		if identity != "" && identity != user || user != ss.s.opts.user || pass != ss.s.opts.pass {
			return smtp.ErrAuthFailed
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.user != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	switch Mode(ss.s.mode.Load()) {
	case TempFailRcpt:
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	case PermFailRcpt:
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := ss.c.TLSConnectionState()
	rec := Received{
		From:      ss.from,
		To:        append([]string(nil), ss.to...),
		MessageID: messageID(raw),
		Raw:       raw,
		TLS:       isTLS,
		Conn:      ss.conn,
	}
	mode := Mode(ss.s.mode.Load())
	if d := ss.s.opts.latency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ss.s.done:
			t.Stop()
		}
	}
	switch mode {
	case TempFailData:
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "queue full"}
	case PermFailData:
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "content rejected"}
	}
	ss.s.record(rec)
	switch mode {
	case HangAfterData:
		select {
		case <-ss.s.release:
		case <-ss.s.done:
		}
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "released"}
	case CloseAfterData:
		_ = ss.c.Conn().Close()
		return nil
	}
	if fn := ss.s.opts.reply; fn != nil {
		return &smtp.SMTPError{Code: 250, EnhancedCode: smtp.NoEnhancedCode, Message: fn(rec)}
	}
	return nil
}

func (ss *session) Reset() {
	ss.from = ""
	ss.to = nil
}

func (ss *session) Logout() error {
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	ss.s.open--
	ss.s.changedLocked()
	return nil
}

func messageID(raw []byte) string {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return ""
	}
	return notice.BareMessageID(m.Header.Get("Message-Id"))
}

var (
	certOnce sync.Once
	certVal  tls.Certificate
	certPool *x509.CertPool
	certErr  error
)

// selfSigned returns a process-wide self-signed certificate for the
// loopback addresses and localhost.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	certOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			certErr = err
			return
		}
		now := time.Now()
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "smtptest"},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(24 * time.Hour),
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			BasicConstraintsValid: true,
			IsCA:                  true,
			IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
			DNSNames:              []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			certErr = err
			return
		}
		leaf, err := x509.ParseCertificate(der)
		if err != nil {
			certErr = err
			return
		}
		certVal = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
		certPool = x509.NewCertPool()
		certPool.AddCert(leaf)
	})
	return certVal, certPool, certErr
}

// latencyListener hands out connections whose replies wait for d after
// the bytes they answer arrived (WithReplyLatency).
type latencyListener struct {
	net.Listener
	d    time.Duration
	done <-chan struct{}
}

func (l latencyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &latencyConn{Conn: c, d: l.d, done: l.done, last: time.Now()}, nil
}

// latencyConn delays each write until d after the latest read that
// returned bytes (for the greeting: after the connection was accepted).
// A write waits on its own connection's goroutine only.
type latencyConn struct {
	net.Conn
	d    time.Duration
	done <-chan struct{}

	mu   sync.Mutex
	last time.Time
}

func (c *latencyConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.last = time.Now()
		c.mu.Unlock()
	}
	return n, err
}

func (c *latencyConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	wait := time.Until(c.last.Add(c.d))
	c.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.done:
			t.Stop()
		}
	}
	return c.Conn.Write(p)
}
