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
//
// Each provider with such an API implements it in its own package
// (internal/provider/<name>: postmark, mailgun, sendgrid, twilio) over one
// paced, retrying HTTP client (Client), and reads the answers by its own
// webhook's event mapping (Decode). Reconcile (run.go) asks about each
// claim in quarantine and applies the answers, one transaction per
// claim: what is the same for every provider. SES has no such API.
package ask

import (
	"context"
	"errors"
	"fmt"
	"time"

	"scan/internal/ledger"
	"scan/internal/usage"
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
	// Unknown, when not empty, says why the provider's record cannot tell
	// (the claim is older than the provider keeps records, the API cannot
	// be searched for it): the claim stays in quarantine, for an operator.
	Unknown string
}

// NotFound is the answer when the provider has no record of the claim's
// attempt, evaluated at now. It is evidence that the message never
// reached the provider (one "not sent" settlement, so that the next pass
// sends it again) only once the provider's documented indexing delay has
// passed since the claim, and only while the claim is younger than the
// shortest retention the provider documents (an older record may have
// been discarded); before the delay it is Pending, after the retention
// Unknown.
func NotFound(provider string, c Claim, now time.Time, delay, retention time.Duration) Answer {
	age := now.Sub(c.ClaimedAt)
	switch {
	case age < delay:
		return Answer{Pending: true}
	case age > retention:
		return Answer{Unknown: fmt.Sprintf("claimed %v ago: %s keeps its record of a message for as little as %v", age.Round(time.Minute), provider, retention)}
	}
	return Answer{Settlements: []ledger.Settlement{{Key: c.Key, MessageID: c.MessageID, ProviderID: c.ProviderID,
		To: ledger.Retry, Kind: ledger.KindNotSent, Event: provider + ":api/not_found", At: now, Attempt: c.Attempt,
		Detail: fmt.Sprintf("no record %v after the claim (indexing delay %v)", age.Round(time.Minute), delay)}}}
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

// Spec is how a provider's package offers its pull API to `--ask`: the
// command checks Settings, then the base URL in BaseURLVar (an http(s)
// URL, or unset for the provider's own), then, when ByMetadata, that the
// policy's provider is this one (the API finds messages by the metadata
// that provider's correlation headers add), and builds the Provider with
// New. Settings and New report a wrong or missing setting as a
// *ConfigError naming it.
type Spec struct {
	Settings   func(getenv func(string) string) error
	BaseURLVar string
	ByMetadata bool
	New        func(getenv func(string) string, cfg ClientConfig) (Provider, error)
}

// ConfigError is a setting of --ask that is missing or wrong; Field
// names it.
type ConfigError = usage.Error
