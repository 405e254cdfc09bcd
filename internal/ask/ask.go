// Package ask asks an email provider's own API what became of the messages
// scan handed it: about one claim in quarantine (`scan reconcile --ask`),
// or every message it accepted since an instant (`scan recover --ask`,
// after the ledger's database went back in time). Answers are expressed
// as ledger.Settlements, so that they are applied by the same rules as
// webhooks, the SQS drain and event files (ledger.Settle).
//
// A Provider is bounded and paced: it issues at most one request at a time
// per its Config, retries 429 and 5xx answers with backoff, and stops when
// its context is cancelled.
package ask

import (
	"context"
	"errors"
	"time"

	"scan/internal/ledger"
)

// Claim is what a Provider needs to know of one claim to ask about it.
type Claim struct {
	Key        string    // the notice key (the message carries it as metadata)
	MessageID  string    // without angle brackets
	ProviderID string    // the provider's message id, when the pass recorded one
	Attempt    int       // the attempt the message carried
	ClaimedAt  time.Time // when the attempt was claimed
	// Digest is the SHA-256 of what the attempt handed over (the ledger's
	// message_sha256); nil when unknown. An sms carries no key, so the
	// twilio provider finds its message by the body's digest (issue 30).
	Digest []byte
}

// Answer is what the provider said about one claim.
type Answer struct {
	// Settlements are the events the provider's record holds for the
	// message (accepted, delivered, bounced, ...), or one "not sent"
	// settlement when the provider has no such message and its documented
	// indexing delay has passed since the claim.
	Settlements []ledger.Settlement
	// Pending reports that the provider has no record of the message yet
	// but its indexing delay has not passed: the claim stays in quarantine.
	Pending bool
}

// Provider is one provider's API, as `scan reconcile --ask` and `scan
// recover --ask` use it. Implementations are safe for use by one goroutine
// at a time.
type Provider interface {
	// Name is the provider's name as the command line spells it
	// (postmark, mailgun, sendgrid).
	Name() string
	// About asks about one claim, evaluated at now.
	About(ctx context.Context, c Claim, now time.Time) (Answer, error)
	// Since calls fn with a settlement for every message the provider
	// accepted (and every later event of it) from since onwards.
	Since(ctx context.Context, since time.Time, fn func(ledger.Settlement) error) error
}

// ErrUnsupported reports that the provider (or the account) has no API
// that answers the question: SES has none, SendGrid's Email Logs API is an
// add-on of some accounts only.
var ErrUnsupported = errors.New("the provider's API cannot answer this")
