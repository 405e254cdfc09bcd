package send

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The SMTP sender is split by concern over five files:
//   - smtp.go: SMTPConfig, the SMTP type and NewSMTP, Send and Lane;
//   - smtp_pool.go: the pool of connections and the lanes over it;
//   - smtp_session.go: dialling, STARTTLS, EHLO and AUTH, and the
//     connection wrappers that bound a send and hand the session to go-smtp;
//   - smtp_txn.go: the mail transaction, written on the wire here;
//   - smtp_reply.go: reading the server's replies and classifying them.

// Defaults for SMTPConfig.
const (
	DefaultSMTPPool    = 16
	DefaultSendTimeout = 30 * time.Second
	DefaultHelo        = "localhost"
)

// SMTPConfig configures an SMTP sender.
type SMTPConfig struct {
	// URL is smtp://[user:pass@]host[:port] (port 587 by default; STARTTLS
	// when the server offers it, and required unless host is a loopback
	// address or "localhost") or smtps://[user:pass@]host[:port] (implicit
	// TLS, port 465 by default). With a user, the sender authenticates
	// with AUTH PLAIN, which only ever travels over TLS or loopback.
	URL string
	// Pool is the most connections open at once, and so the most sends in
	// flight; give it the Dispatcher's Concurrency. Default
	// DefaultSMTPPool.
	Pool int
	// Timeout bounds one Send, dialling included. Default
	// DefaultSendTimeout.
	Timeout time.Duration
	// TLSConfig is the base client TLS configuration, e.g. RootCAs for a
	// test server. ServerName defaults to the URL's host. Certificates are
	// always verified: InsecureSkipVerify is refused.
	TLSConfig *tls.Config
	// Helo is the name given in EHLO. Default DefaultHelo.
	Helo string
}

// SMTP is a Sender that submits each message to one SMTP server over a
// pool of reused connections. A connection serves one message at a time
// and is reused after a transaction that ended cleanly (a reply to the end
// of the message, or a refused MAIL); one left mid-transaction by a refused
// RCPT or DATA, or by any I/O failure, is dropped. A pooled connection that
// the server closed while idle is replaced transparently.
//
// When the server offers PIPELINING (RFC 2920), MAIL, RCPT and DATA go
// out in one write, and on a Lane the next message's envelope goes out in
// the same write as this one's end of data; its content only ever follows
// the server's 354. go-smtp sets the session up (EHLO, AUTH); the
// transactions are written here, since its client does not pipeline.
//
// Outcomes: a failure to connect, greet, start TLS or authenticate is
// Transient (ErrMisconfigured when TLS is required but not offered, or the
// credentials are refused); a 4xx reply to MAIL, RCPT, DATA or to the end
// of the message is Transient and a 5xx reply Permanent, both with Code;
// a failure while writing the message is Transient; a timeout, reset or
// EOF while waiting for the reply to the end of the message (when the
// server holds the whole message) is Unknown.
//
// An SMTP is safe for concurrent use.
type SMTP struct {
	addr        string // host:port
	host        string
	implicitTLS bool
	requireTLS  bool
	user, pass  string
	hasAuth     bool
	timeout     time.Duration
	helo        string
	tlsConfig   *tls.Config
	redacted    string

	slots chan struct{}  // one per connection in use or being dialled
	idle  chan *smtpConn // connections waiting for their next message

	mu     sync.Mutex
	closed bool
}

var _ Sender = (*SMTP)(nil)

// NewSMTP validates cfg and fills its defaults. It does not connect: the
// first Send does.
func NewSMTP(cfg SMTPConfig) (*SMTP, error) {
	s := &SMTP{redacted: RedactURL(cfg.URL)}
	u, err := url.Parse(cfg.URL)
	if err != nil || cfg.URL == "" {
		return nil, fmt.Errorf("send: SMTPConfig.URL %s is not a URL", s.redacted)
	}
	port := ""
	switch u.Scheme {
	case "smtp":
		port = "587"
	case "smtps":
		port = "465"
		s.implicitTLS = true
	default:
		return nil, fmt.Errorf("send: SMTPConfig.URL %s: scheme must be smtp or smtps", s.redacted)
	}
	s.host = u.Hostname()
	if s.host == "" {
		return nil, fmt.Errorf("send: SMTPConfig.URL %s has no host", s.redacted)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("send: SMTPConfig.URL %s: bad port", s.redacted)
		}
		port = p
	}
	s.addr = net.JoinHostPort(s.host, port)
	s.requireTLS = tlsRequired(s.host)
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
		s.hasAuth = s.user != ""
	}
	if cfg.Pool < 0 {
		return nil, fmt.Errorf("send: SMTPConfig.Pool %d is negative", cfg.Pool)
	}
	if cfg.Pool == 0 {
		cfg.Pool = DefaultSMTPPool
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("send: SMTPConfig.Timeout %v is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultSendTimeout
	}
	s.timeout = cfg.Timeout
	if cfg.Helo == "" {
		cfg.Helo = DefaultHelo
	}
	if strings.ContainsAny(cfg.Helo, " \r\n\t") {
		return nil, errors.New("send: SMTPConfig.Helo contains white space")
	}
	s.helo = cfg.Helo
	if cfg.TLSConfig != nil {
		if cfg.TLSConfig.InsecureSkipVerify {
			return nil, errors.New("send: SMTPConfig.TLSConfig.InsecureSkipVerify is not allowed")
		}
		s.tlsConfig = cfg.TLSConfig.Clone()
	} else {
		s.tlsConfig = &tls.Config{}
	}
	if s.tlsConfig.ServerName == "" {
		s.tlsConfig.ServerName = s.host
	}
	if s.tlsConfig.MinVersion == 0 {
		s.tlsConfig.MinVersion = tls.VersionTLS12
	}
	s.slots = make(chan struct{}, cfg.Pool)
	s.idle = make(chan *smtpConn, cfg.Pool)
	return s, nil
}

// IsLoopback reports whether host (a URL's Hostname) names this machine:
// "localhost" in any case, or a loopback IP address. It is the one test of
// what may be reached without TLS, and (by cmd/scan) outside production.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tlsRequired reports whether a connection to host must be encrypted: it
// must unless host is loopback.
func tlsRequired(host string) bool { return !IsLoopback(host) }

// RedactURL returns raw with any password replaced by "xxxxx", for logs
// and errors. A string that does not parse as a URL comes back as
// "[unparseable URL]", since it might hold a password.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[unparseable URL]"
	}
	return u.Redacted()
}

// String returns the server's URL without the password.
func (s *SMTP) String() string { return s.redacted }

// Send submits m to the server, taking a pooled connection or dialling a
// new one. It waits for a free connection while Pool sends are in flight.
// Send returns within the configured Timeout or when ctx ends, whichever
// is first. The Receipt's ProviderID is the provider's message id when the
// final reply carries one (see ReplyProviderID), else empty.
func (s *SMTP) Send(ctx context.Context, m *Message) (Receipt, error) {
	l := smtpLane{s: s}
	defer l.Close()
	return l.Send(ctx, m, nil)
}

var _ Pipeliner = (*SMTP)(nil)

// Lane returns a Lane over s's connections. Between two of its sends the
// lane keeps the connection (and its place in Pool) that carries the next
// message's envelope; otherwise the connection goes back to the pool.
func (s *SMTP) Lane() Lane { return &smtpLane{s: s} }
