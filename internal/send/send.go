// Package send owns how a notice leaves the process: the senders that
// deliver a rendered message over the generic transports (outbox files,
// SMTP, HTTP; a provider's own API, as Amazon SES's, is a Sender in its
// package under internal/provider) and the
// Dispatcher that renders in its workers (through a Renderer, which
// internal/message implements: this package holds no template), paces each
// recipient domain with the token buckets of internal/pace's Limits, and
// retries. It knows nothing of the database: the caller claims a notice
// before handing it here and records the Result that comes back.
package send

import (
	"context"
	"errors"
	"fmt"

	"scan/internal/notice"
)

// Notice, Message and Renderer are notice's (the types live below both
// the renderer, internal/message, and this package, so that message does
// not import send). The aliases keep this package's own code, and
// branches written against send.Notice, reading as before; new code
// outside this package names notice.Notice.
type (
	Notice   = notice.Notice
	Message  = notice.Message
	Renderer = notice.Renderer
)

// ErrNotAttempted is the cause of a Transient *Error for a notice that was
// never handed to a sender, because the run was cancelled first.
var ErrNotAttempted = errors.New("send: not attempted")

// ErrMisconfigured is the cause of a Transient *Error that no retry can
// cure: the provider refused the connection itself (TLS required but not
// offered, authentication rejected). Nothing was sent; a caller should stop
// the pass rather than try every notice in turn. The Dispatcher does not
// retry it.
var ErrMisconfigured = errors.New("send: sender misconfigured")

// ErrUnreachable is the cause of a Transient *Error for a send whose
// connection to the provider could not be opened (refused, no route, DNS):
// nothing was handed over. The dispatcher retries it like any Transient
// error; a caller that still sees it after the retries may conclude that
// the provider is down and stop the pass.
var ErrUnreachable = errors.New("send: provider unreachable")

// ErrUnsubscribed is the cause of a Permanent *Error for a recipient who
// told the provider to send them nothing more (Twilio's 21610, a STOP
// reply): the caller puts the address on its suppression list.
var ErrUnsubscribed = errors.New("send: the recipient unsubscribed from this sender")

// Receipt is what a provider said when it accepted a message.
type Receipt struct {
	ProviderID string // provider's id for the message; may be empty
	// Sender names the sender that accepted the message when a Failover
	// chose among several ("ses", "smtp", ...); "" from a single sender.
	Sender string
}

// Sender delivers one rendered message. Implementations must honour ctx
// and must return an *Error (or nil) so the caller can classify the outcome.
// A Sender is safe for concurrent use.
type Sender interface {
	Send(ctx context.Context, m *Message) (Receipt, error)
	Close() error
}

// A Pipeliner is a Sender that can start the next message's transaction
// while the current one's final reply is on its way, on the same
// connection: SMTP with PIPELINING (RFC 2920) sends one message's end of
// data and the next message's MAIL, RCPT and DATA in one write. Against a
// provider one round trip away, a message then costs one round trip
// instead of four, and the connection never idles between two messages.
// The Dispatcher gives each worker a Lane when its Sender is a Pipeliner.
type Pipeliner interface {
	Sender
	Lane() Lane
}

// A Lane is one worker's ordered sequence of sends. It is not safe for
// concurrent use.
type Lane interface {
	// Send delivers m, with the same outcomes and bounds as Sender.Send.
	// If next is not nil, the lane may send next's envelope behind m's
	// end of data; nothing of next's content leaves before the next call
	// to Send, which must be for next for the overlap to count. A lane
	// given another message, or closed, abandons next's envelope, and
	// next was not delivered.
	Send(ctx context.Context, m, next *Message) (Receipt, error)
	// Close releases what the lane holds. Calling it more than once does
	// nothing.
	Close()
}

// Class says what is known about a failed send.
type Class int

const (
	// Transient: the provider definitely did not accept the message
	// (SMTP 4xx, HTTP 429/503, connection refused, not attempted). Safe to
	// try again.
	Transient Class = iota + 1
	// Permanent: the provider rejected the message for good (SMTP 5xx,
	// HTTP 4xx, invalid recipient).
	Permanent
	// Unknown: the message may have been accepted (a timeout or reset after
	// it was handed over). The claim must stay quarantined.
	Unknown
)

func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	case Unknown:
		return "unknown"
	}
	return "invalid"
}

// Error is a classified send failure. Code is the SMTP reply code or HTTP
// status when there was one, else 0.
type Error struct {
	Class Class
	Code  int
	Err   error
}

func (e *Error) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("%s (%d): %v", e.Class, e.Code, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Class, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Classify returns the class of err: nil is not an error (0), an *Error
// its Class, and anything else Unknown (when in doubt, quarantine).
func Classify(err error) Class {
	if err == nil {
		return 0
	}
	var se *Error
	if errors.As(err, &se) {
		return se.Class
	}
	return Unknown
}
