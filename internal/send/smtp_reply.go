package send

import (
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-smtp"
)

// Reading replies: a bound on what a server may send, and the
// classification of a reply (or its absence) into Transient, Permanent or
// Unknown, by the phase it answers.

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
// handed over, or (handedOver) the reply to the end of the message: once
// the final dot has left, an I/O failure or a reply out of protocol is
// Unknown (the invariant stated in smtpConn.content). The server's text
// is kept, with the recipient address removed.
func replyError(stage string, err error, to string, handedOver bool) error {
	var te *textproto.Error
	if !errors.As(err, &te) {
		class := Transient
		if handedOver {
			class = Unknown
		}
		return &Error{Class: class, Err: fmt.Errorf("smtp: %s: %s", stage, Scrub(err.Error(), to))}
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
	return &Error{Class: class, Code: te.Code, Err: fmt.Errorf("smtp: %s: %s", stage, Scrub(stripEnhanced(te.Msg), to))}
}

// Scrub removes the recipient address from a server's text, so that errors
// and receipts can be logged and stored.
func Scrub(s, to string) string {
	if to == "" {
		return s
	}
	return strings.ReplaceAll(s, to, "[recipient]")
}

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
