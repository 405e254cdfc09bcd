package send

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The mail transaction: MAIL, RCPT and DATA (pipelined when the server
// offers it), the dot-stuffed content and the reply to its end. Two
// invariants are enforced here, each stated where it is: the content only
// follows 354, and the outcome is Unknown once the final dot has left.

// transact runs one mail transaction on c: the envelope (unless it went
// out behind the previous message), the content, and, when next is given
// and the server pipelines, next's envelope in the same write.
func (c *smtpConn) transact(m, next *Message) (Receipt, connState, error) {
	c.lim.left = maxReplies
	if state, err := c.envelope(m); err != nil {
		return Receipt{}, state, err
	}
	// Invariant: content only follows 354. envelope has returned an error
	// on any refusal of MAIL or RCPT and on any reply to DATA but 354, so
	// the first byte of m's content is written only after the server's
	// 354. With PIPELINING the envelope goes out ahead of its replies, and
	// next's envelope behind this message's dot, but content never does:
	// next's waits for its own 354 in its own transact (and drain drops a
	// connection whose server said 354 to a DATA after a refused command).
	if state, err := c.content(m, next); err != nil {
		return Receipt{}, state, err
	}
	return c.endOfData(m.Notice.To)
}

// envelope sends m's MAIL, RCPT and DATA (unless they went out behind the
// previous message) and reads their replies, up to DATA's 354. On an
// error it says what becomes of the connection.
func (c *smtpConn) envelope(m *Message) (connState, error) {
	if c.pending == nil {
		if err := c.envelopeFits(m); err != nil {
			return connReuse, err
		}
		if c.pipelining {
			c.writeEnvelope(m)
			if err := c.w.Flush(); err != nil {
				return connStale, &Error{Class: Transient, Err: fmt.Errorf("smtp: mail: %w", err)}
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
				return state, &Error{Class: Transient, Err: fmt.Errorf("smtp: %s: %w", cmd.stage, err)}
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
			return state, replyError(cmd.stage, err, m.Notice.To, false)
		}
	}
	return connReuse, nil
}

// content writes m's dot-stuffed content, with next's envelope behind it
// when it fits, and flushes it: the one step after which the server may
// hold the message. On an error it says what becomes of the connection.
func (c *smtpConn) content(m, next *Message) (connState, error) {
	if err := writeDotted(c.w, m.Raw); err != nil {
		// The final dot did not leave: the server cannot have accepted
		// the message.
		return connDrop, &Error{Class: Transient, Err: fmt.Errorf("smtp: writing message: %w", err)}
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
	// Invariant: the outcome is Unknown once the final dot has left. Until
	// this Flush nothing the server could accept has left, and every
	// failure above is Transient (sending again is safe). From here the
	// server may hold the message and deliver it: a Flush that failed with
	// the dot still in the buffer is Transient, but one that let the dot
	// out, and a missing or out-of-protocol reply to it (replyError with
	// handedOver, in endOfData), is Unknown: never retried, left in
	// quarantine.
	if err := c.w.Flush(); err != nil {
		c.pending = nil
		if c.w.Buffered() > envLen {
			// The final dot did not leave.
			return connDrop, &Error{Class: Transient, Err: fmt.Errorf("smtp: writing message: %w", err)}
		}
		return connDrop, &Error{Class: Unknown, Err: fmt.Errorf("smtp: no reply after the message was handed over: %w", err)}
	}
	return connReuse, nil
}

// endOfData reads the reply to the final dot of the message to to: the
// provider's receipt, or the error of a message handed over.
func (c *smtpConn) endOfData(to string) (Receipt, connState, error) {
	_, msg, err := c.r.ReadResponse(250)
	if err != nil {
		if code := replyCode(err); code >= 400 && code < 600 && code != 421 {
			// The transaction is over either way (RFC 5321 4.1.1.4).
			return Receipt{}, connReuse, replyError("end of data", err, to, true)
		}
		c.pending = nil
		return Receipt{}, connDrop, replyError("end of data", err, to, true)
	}
	// A reply that names no id ("250 Great success", Mailgun's) gives no
	// provider id: its text would be stored as one, and no event names it.
	return Receipt{ProviderID: ReplyProviderID(msg)}, connReuse, nil
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
			// 354: the server waits for content that must not follow
			// (see transact); the connection cannot be reused.
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

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// smtpWriteBuffer holds a whole notice and the next one's envelope, so
// that each goes out in one write.
const smtpWriteBuffer = 64 << 10
