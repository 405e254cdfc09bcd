package send

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// Named is a Sender with the name an attempt records for it ("ses",
// "smtp", "http", "outbox", "twilio").
type Named struct {
	Name   string
	Sender Sender
}

// DefaultFailAfter is how many failures in a row that prove nothing was
// handed over (FailoverConfig.FailAfter) make a Failover give up on a
// sender.
const DefaultFailAfter = 3

// FailoverConfig configures a Failover.
type FailoverConfig struct {
	// Senders in the order they are tried; at least one. The first is the
	// one every message goes to while it can send.
	Senders []Named
	// FailAfter is how many failures in a row of the current sender, each
	// proving that nothing was handed over (an unavailable service: 5xx or
	// 429 after the sender's own retries, or a connection refused before
	// handover), make the Failover move on. A refusal of the account or the
	// credentials (ErrMisconfigured) moves on at once. Default
	// DefaultFailAfter.
	FailAfter int
}

// Failover is a Sender over an ordered list of senders: every message goes
// to the current one, and the Failover moves to the next when the current
// one proves that it cannot send, for the message in hand and every later
// one. It is safe for concurrent use.
//
// It moves on only on a failure that proves the message was not accepted
// (Class Transient): ErrMisconfigured (the account paused or suspended, the
// credentials refused) at once; ErrUnreachable, an HTTP or SMTP reply of
// 5xx or 429 after FailAfter such failures in a row. An Unknown outcome (a
// timeout or reset after handover) never goes to another sender: the
// message may have been accepted, so the claim stays in quarantine. A
// Permanent failure is the recipient's, not the sender's, and is returned
// as it is. A sender once given up stays given up for the Failover's life
// (one pass). A Failover is a Pipeliner whose lanes pipeline through the
// current sender's when it is one (failover_lane.go).
type Failover struct {
	senders   []Named
	failAfter int

	mu      sync.Mutex
	current int // index into senders
	strikes int // proving failures in a row of senders[current]
}

// NewFailover returns a Failover over cfg.Senders.
func NewFailover(cfg FailoverConfig) (*Failover, error) {
	if len(cfg.Senders) == 0 {
		return nil, errors.New("send: a failover needs at least one sender")
	}
	for i, s := range cfg.Senders {
		if s.Sender == nil || s.Name == "" {
			return nil, fmt.Errorf("send: failover sender %d has no name or no sender", i)
		}
	}
	if cfg.FailAfter <= 0 {
		cfg.FailAfter = DefaultFailAfter
	}
	return &Failover{senders: cfg.Senders, failAfter: cfg.FailAfter}, nil
}

// Send delivers m through the current sender, moving on to the next ones
// as the type's comment says. The Receipt names the sender that accepted
// m (Receipt.Sender); a failure names the sender that failed
// (SenderOf).
func (f *Failover) Send(ctx context.Context, m *Message) (Receipt, error) {
	return f.deliver(ctx, func(i int) (Receipt, error) { return f.senders[i].Sender.Send(ctx, m) })
}

// deliver runs send on the current sender, and again on the next one for
// as long as failed says the message is to be tried there: the one
// failover rule of Send and of a Lane's Send.
func (f *Failover) deliver(ctx context.Context, send func(i int) (Receipt, error)) (Receipt, error) {
	for {
		i := f.at()
		name := f.senders[i].Name
		rec, err := send(i)
		if err == nil {
			f.succeeded(i)
			rec.Sender = name
			return rec, nil
		}
		err = &senderError{name: name, err: err}
		if !f.failed(i, err) || ctx.Err() != nil {
			return Receipt{}, err
		}
	}
}

// CanMoveOn reports whether err came from a sender of f that is not its
// last: f still has a sender to move to, so a failure of that sender that
// would stop a single sender's pass (ErrMisconfigured, ErrUnreachable) is
// no reason to stop this one.
func (f *Failover) CanMoveOn(err error) bool {
	name := SenderOf(err)
	for _, s := range f.senders[:len(f.senders)-1] {
		if name != "" && s.Name == name {
			return true
		}
	}
	return false
}

// Later reports whether name is one of f's senders after the first: a
// message it took went by failover.
func (f *Failover) Later(name string) bool {
	for _, s := range f.senders[1:] {
		if s.Name == name {
			return true
		}
	}
	return false
}

// Current returns the name of the sender messages go to now.
func (f *Failover) Current() string { return f.senders[f.at()].Name }

// Close closes every sender, returning the first error.
func (f *Failover) Close() error {
	var first error
	for _, s := range f.senders {
		if err := s.Sender.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (f *Failover) at() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current
}

func (f *Failover) succeeded(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current == i {
		f.strikes = 0
	}
}

// failed counts err against sender i and reports whether the message is to
// be tried again on the (new) current sender: true only when the Failover
// has moved past i, now or since i was picked, and err proves the message
// was not handed over.
func (f *Failover) failed(i int, err error) bool {
	proves := provesCannotSend(err)
	f.mu.Lock()
	defer f.mu.Unlock()
	if proves == noProof {
		if f.current == i {
			f.strikes = 0
		}
		return false
	}
	if f.current == i {
		f.strikes++
		if (proves == refused || f.strikes >= f.failAfter) && i+1 < len(f.senders) {
			f.current, f.strikes = i+1, 0
		}
	}
	return f.current > i
}

// smtpServiceUnavailable is SMTP's 421: the service is not available and
// closes the connection (RFC 5321 4.2.3).
const smtpServiceUnavailable = 421

type proof int

const (
	noProof     proof = iota // nothing proves the sender cannot send
	unavailable              // the service is down or refusing connections
	refused                  // the account or the credentials are refused
)

// provesCannotSend sorts a failed send: whether it proves the sender itself
// cannot send (never for an Unknown or Permanent outcome).
func provesCannotSend(err error) proof {
	var se *Error
	if !errors.As(err, &se) || se.Class != Transient || errors.Is(err, ErrNotAttempted) {
		return noProof
	}
	switch {
	case errors.Is(err, ErrMisconfigured):
		return refused
	case errors.Is(err, ErrUnreachable), se.Code >= 500, se.Code == http.StatusTooManyRequests,
		se.Code == smtpServiceUnavailable:
		return unavailable
	}
	return noProof
}

// senderError names the sender a failure came from.
type senderError struct {
	name string
	err  error
}

func (e *senderError) Error() string { return e.name + ": " + e.err.Error() }
func (e *senderError) Unwrap() error { return e.err }

// SenderOf returns the name of the sender a Failover's error came from, ""
// when err did not come through a Failover.
func SenderOf(err error) string {
	var se *senderError
	if errors.As(err, &se) {
		return se.name
	}
	return ""
}
