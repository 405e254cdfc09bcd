package send

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

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
// final reply carries one (see ReplyProviderID), else the reply's text, or
// "smtp:"+Message-ID when the reply has none.
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

type smtpLane struct {
	s *SMTP
	c *smtpConn // with the next message's envelope pending, and a slot
}

func (l *smtpLane) Close() {
	if l.c != nil {
		// Mid-transaction: the envelope's replies are unread and no
		// content was sent. Nothing to save.
		l.c.close()
		l.c = nil
		<-l.s.slots
	}
}

func (l *smtpLane) Send(ctx context.Context, m, next *Message) (Receipt, error) {
	s := l.s
	c := l.c
	l.c = nil
	if c != nil && c.pending != m {
		c.close()
		c = nil
		<-s.slots
	}
	if err := ctx.Err(); err != nil {
		if c != nil {
			c.close()
			<-s.slots
		}
		return Receipt{}, &Error{Class: Transient, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if c == nil {
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			return Receipt{}, &Error{Class: Transient, Err: fmt.Errorf("smtp: waiting for a connection: %w", ctx.Err())}
		}
		select {
		case c = <-s.idle:
		default:
		}
	}
	// The slot is held from here.
	if c != nil {
		c.dc.begin(deadline)
	}
	for {
		reused := c != nil
		if c == nil {
			var err error
			if c, err = s.dial(ctx, deadline); err != nil {
				<-s.slots
				return Receipt{}, err
			}
		}
		stop := context.AfterFunc(ctx, c.dc.expire)
		rcpt, state, err := c.transact(m, next)
		if !stop() && state == connReuse {
			state = connDrop // the deadline was forced into the past
		}
		switch {
		case state == connReuse && c.pending != nil:
			l.c = c // it carries next's envelope: keep it, and the slot
			return rcpt, err
		case state == connReuse:
			s.put(c)
		case state == connStale && reused && ctx.Err() == nil:
			// The server closed the idle connection before MAIL was
			// taken: nothing was sent, dial afresh.
			c.close()
			c = nil
			continue
		default:
			c.close()
		}
		<-s.slots
		return rcpt, err
	}
}

// connState says what a transaction left its connection fit for.
type connState int

const (
	connReuse connState = iota // in step, no transaction open
	connDrop                   // mid-transaction or broken
	connStale                  // failed at MAIL without a reply, or 421: closed by the server
)

func (s *SMTP) put(c *smtpConn) {
	c.dc.begin(time.Time{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.close()
		return
	}
	select {
	case s.idle <- c:
	default:
		c.close()
	}
}

// transact runs one mail transaction on c: the envelope (unless it went
// out behind the previous message), the content, and, when next is given
// and the server pipelines, next's envelope in the same write.
func (c *smtpConn) transact(m, next *Message) (Receipt, connState, error) {
	to := m.Notice.To
	c.lim.left = maxReplies
	if c.pending == nil {
		if err := c.envelopeFits(m); err != nil {
			return Receipt{}, connReuse, err
		}
		if c.pipelining {
			c.writeEnvelope(m)
			if err := c.w.Flush(); err != nil {
				return Receipt{}, connStale, &Error{Class: Transient, Err: fmt.Errorf("smtp: mail: %w", err)}
			}
		}
	}
	c.pending = nil
	for i, cmd := range envelopeCmds {
		if !c.pipelining {
			c.cmd(c.w, m, i)
			if err := c.w.Flush(); err != nil {
				state := connDrop
				if i == 0 {
					state = connStale
				}
				return Receipt{}, state, &Error{Class: Transient, Err: fmt.Errorf("smtp: %s: %w", cmd.stage, err)}
			}
		}
		if _, _, err := c.r.ReadResponse(cmd.code); err != nil {
			state := connDrop // a transaction is open, or the stream is lost
			if i == 0 {
				state = connReuse // a refused MAIL opens no transaction
				if code := replyCode(err); code == 0 || code == 421 {
					state = connStale
				}
			}
			if state == connReuse && c.pipelining && !c.drain(len(envelopeCmds)-1-i) {
				state = connDrop
			}
			return Receipt{}, state, replyError(cmd.stage, err, to, false)
		}
	}
	if err := writeDotted(c.w, m.Raw); err != nil {
		// The final dot did not leave: the server cannot have accepted
		// the message.
		return Receipt{}, connDrop, &Error{Class: Transient, Err: fmt.Errorf("smtp: writing message: %w", err)}
	}
	// next's envelope goes in the same write, if it fits in the buffer:
	// then the one write that can fail after the dot is this Flush, and
	// what it leaves unwritten says whether the dot left.
	envLen := 0
	if next != nil && c.pipelining && c.envelopeFits(next) == nil {
		if n := c.envelopeLen(next); n <= c.w.Available() {
			c.writeEnvelope(next)
			c.pending, envLen = next, n
		}
	}
	if err := c.w.Flush(); err != nil {
		c.pending = nil
		if c.w.Buffered() > envLen {
			// The final dot did not leave.
			return Receipt{}, connDrop, &Error{Class: Transient, Err: fmt.Errorf("smtp: writing message: %w", err)}
		}
		return Receipt{}, connDrop, &Error{Class: Unknown, Err: fmt.Errorf("smtp: no reply after the message was handed over: %w", err)}
	}
	_, msg, err := c.r.ReadResponse(250)
	if err != nil {
		if code := replyCode(err); code >= 400 && code < 600 && code != 421 {
			// The transaction is over either way (RFC 5321 4.1.1.4).
			return Receipt{}, connReuse, replyError("end of data", err, to, true)
		}
		c.pending = nil
		return Receipt{}, connDrop, replyError("end of data", err, to, true)
	}
	id := ReplyProviderID(msg)
	if id == "" {
		id = scrub(strings.TrimSpace(stripEnhanced(msg)), to)
	}
	if id == "" {
		id = "smtp:" + m.MessageID
	}
	return Receipt{ProviderID: id}, connReuse, nil
}

// ReplyProviderID returns the provider's message id in the text of a
// final 250 reply (without the code), or "" when it names none:
//
//   - "Ok: queued as 4F1B22A0B1" (Postfix, SendGrid and most relays):
//     the word after "queued as";
//   - "OK id=1rXyz-0001ab-2Q" (Exim): the value of id=;
//   - "Ok 0100018f2c9d5e7a-..." (Amazon SES): the one word after "Ok".
//
// An enhanced status code ("2.0.0 ") in front is skipped, angle brackets
// and trailing punctuation around the id are removed. Only the last line
// of a multi-line reply is read. The id never holds a space, a control
// character or a quote, so it is safe to log and store.
func ReplyProviderID(msg string) string {
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	fields := strings.Fields(stripEnhanced(strings.TrimSpace(msg)))
	id := ""
	for i, f := range fields {
		lf := strings.ToLower(f)
		switch {
		case lf == "queued" && i+2 < len(fields) && strings.EqualFold(fields[i+1], "as"):
			id = fields[i+2]
		case strings.HasPrefix(lf, "id=") && len(f) > 3:
			id = f[3:]
		}
		if id != "" {
			break
		}
	}
	if id == "" && len(fields) == 2 && strings.EqualFold(fields[0], "ok") && strings.ContainsAny(fields[1], "0123456789") {
		id = fields[1]
	}
	id = strings.TrimRight(id, ".,;:")
	if strings.HasPrefix(id, "<") && strings.HasSuffix(id, ">") {
		id = id[1 : len(id)-1]
	}
	for _, r := range id {
		if r <= ' ' || r == 0x7f || r == '"' || r == '\'' || r == '<' || r == '>' || r >= utf8.RuneSelf {
			return ""
		}
	}
	if len(id) > 200 {
		return ""
	}
	return id
}

// envelopeCmds are the commands of an envelope, with the reply each
// expects (textproto's ReadResponse: 25 takes 250 and 251, "will
// forward").
var envelopeCmds = [...]struct {
	stage string
	code  int
}{{"mail", 250}, {"rcpt", 25}, {"data", 354}}

// envelopeFits refuses, before anything is written, an envelope the server
// cannot take.
func (c *smtpConn) envelopeFits(m *Message) error {
	if strings.ContainsAny(m.From, "\r\n<>") || strings.ContainsAny(m.Notice.To, "\r\n<>") {
		return &Error{Class: Permanent, Err: errors.New("smtp: an envelope address contains CR, LF or angle brackets")}
	}
	if (!isASCII(m.From) || !isASCII(m.Notice.To)) && !c.utf8 {
		return &Error{Class: Permanent, Err: errors.New("smtp: address needs SMTPUTF8, which the server does not offer")}
	}
	return nil
}

// envelopeLen returns the length in bytes of m's envelope.
func (c *smtpConn) envelopeLen(m *Message) int {
	var n countWriter
	for i := range envelopeCmds {
		c.cmd(&n, m, i)
	}
	return int(n)
}

type countWriter int

func (n *countWriter) WriteString(s string) (int, error) {
	*n += countWriter(len(s))
	return len(s), nil
}
func (n *countWriter) WriteByte(byte) error { *n++; return nil }

// cmd writes command i of m's envelope to w.
func (c *smtpConn) cmd(w interface {
	io.StringWriter
	io.ByteWriter
}, m *Message, i int) {
	switch i {
	case 0:
		w.WriteString("MAIL FROM:<")
		w.WriteString(m.From)
		w.WriteByte('>')
		if c.eightBit {
			w.WriteString(" BODY=8BITMIME")
		}
		if c.size {
			w.WriteString(" SIZE=")
			w.WriteString(strconv.Itoa(len(m.Raw)))
		}
		if !isASCII(m.From) || !isASCII(m.Notice.To) {
			w.WriteString(" SMTPUTF8")
		}
	case 1:
		w.WriteString("RCPT TO:<")
		w.WriteString(m.Notice.To)
		w.WriteByte('>')
	case 2:
		w.WriteString("DATA")
	}
	w.WriteString("\r\n")
}

func (c *smtpConn) writeEnvelope(m *Message) {
	for i := range envelopeCmds {
		c.cmd(c.w, m, i)
	}
}

// drain reads the replies to n pipelined commands that follow a refused
// one, and reports whether the connection is still in step with no
// transaction open.
func (c *smtpConn) drain(n int) bool {
	for range n {
		code, _, err := c.r.ReadResponse(0)
		if err != nil || code == 354 || code == 421 {
			return false
		}
	}
	return true
}

// writeDotted buffers raw as the content of DATA: a line that starts with
// a dot gets a second one (RFC 5321 4.5.2), every line ends in CRLF, and
// the terminating dot follows.
// A write that fails leaves the writer failed, so the first error is the
// last.
func writeDotted(w *bufio.Writer, raw []byte) error {
	for len(raw) > 0 {
		if raw[0] == '.' {
			_ = w.WriteByte('.')
		}
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			_, _ = w.Write(raw)
			_, _ = w.WriteString("\r\n")
			break
		}
		if i > 0 && raw[i-1] == '\r' {
			_, _ = w.Write(raw[:i+1])
		} else {
			_, _ = w.Write(raw[:i])
			_, _ = w.WriteString("\r\n")
		}
		raw = raw[i+1:]
	}
	_, err := w.WriteString(".\r\n")
	return err
}

// stripEnhanced removes an RFC 3463 enhanced status code ("2.0.0 ") from
// the front of a reply's text.
func stripEnhanced(msg string) string {
	code, rest, ok := strings.Cut(msg, " ")
	if !ok || strings.Count(code, ".") != 2 {
		return msg
	}
	for _, r := range code {
		if r != '.' && (r < '0' || r > '9') {
			return msg
		}
	}
	return rest
}

// replyCode returns the server's reply code in err, or 0 for an I/O
// failure.
func replyCode(err error) int {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return se.Code
	}
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// replyError classifies an error at a command before the message was
// handed over, or (handedOver) the reply to the end of the message. The
// server's text is kept, with the recipient address removed.
func replyError(stage string, err error, to string, handedOver bool) error {
	var te *textproto.Error
	if !errors.As(err, &te) {
		class := Transient
		if handedOver {
			class = Unknown
		}
		return &Error{Class: class, Err: fmt.Errorf("smtp: %s: %s", stage, scrub(err.Error(), to))}
	}
	var class Class
	switch {
	case te.Code >= 400 && te.Code < 500:
		class = Transient
	case te.Code >= 500 && te.Code < 600:
		class = Permanent
	case handedOver:
		class = Unknown // a reply out of protocol
	default:
		class = Transient
	}
	return &Error{Class: class, Code: te.Code, Err: fmt.Errorf("smtp: %s: %s", stage, scrub(stripEnhanced(te.Msg), to))}
}

// scrub removes the recipient address from a server's text, so that errors
// and receipts can be logged and stored.
func scrub(s, to string) string {
	if to == "" {
		return s
	}
	return strings.ReplaceAll(s, to, "[recipient]")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

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

// smtpWriteBuffer holds a whole notice and the next one's envelope, so
// that each goes out in one write.
const smtpWriteBuffer = 64 << 10

// maxReplies bounds what a server may send in answer to one transaction:
// a handful of reply lines, each under 512 bytes (RFC 5321 4.5.3.1.5).
// Without it, a broken or hostile server could feed one endless line, or
// endless continuation lines, into memory until the send's timeout.
const maxReplies = 64 << 10

// errRepliesTooLong is the I/O error of a server that exceeded
// maxReplies.
var errRepliesTooLong = fmt.Errorf("smtp: the server's replies exceed %d bytes", maxReplies)

// replyLimit reads at most left bytes from r; transact resets it.
type replyLimit struct {
	r    io.Reader
	left int
}

func (l *replyLimit) Read(b []byte) (int, error) {
	if l.left <= 0 {
		return 0, errRepliesTooLong
	}
	n, err := l.r.Read(b[:min(len(b), l.left)])
	l.left -= n
	return n, err
}

// startTLS reads the greeting, says EHLO and, when the server offers it,
// upgrades the connection with STARTTLS. It returns the connection to run
// the session on, primed with a greeting for smtp.NewClient. Without
// STARTTLS it fails with ErrMisconfigured unless the host is loopback.
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

// Close closes every idle connection (QUIT, bounded by a second) and makes
// connections in use close when their Send ends. Send must not be called
// after Close.
func (s *SMTP) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for {
		select {
		case c := <-s.idle:
			c.quit()
		default:
			return nil
		}
	}
}

// smtpConn is one connection, greeted, encrypted and authenticated.
type smtpConn struct {
	conn net.Conn // the session's stream: TLS over dc, or dc
	dc   *deadlineConn
	lim  *replyLimit
	r    *textproto.Reader
	w    *bufio.Writer

	// What the server offers.
	pipelining, utf8, size, eightBit bool

	// pending is the message whose envelope went out behind the previous
	// message, its replies unread.
	pending *Message
}

func (c *smtpConn) close() { _ = c.conn.Close() }

func (c *smtpConn) quit() {
	c.dc.begin(time.Now().Add(time.Second))
	c.lim.left = maxReplies
	if _, err := c.w.WriteString("QUIT\r\n"); err == nil && c.w.Flush() == nil {
		_, _, _ = c.r.ReadResponse(221)
	}
	c.close()
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
