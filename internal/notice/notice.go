package notice

import "time"

// Notice is one claimed notice, ready to render and send. Every field is
// already validated by the caller (no CR/LF, a parseable address).
//
// The embedded Tuple names the notice: SubscriptionID is logged, never
// sent in a header; Kind selects the template; PeriodStart is the billing
// period the charge starts. The channel is the stage's that sends it: each
// channel has its own renderer, sender and pace.
type Notice struct {
	Key string // 64 hex chars; the notice key
	Tuple
	RenewsAt    time.Time // when the card is charged
	To          string    // recipient address (possibly the staging redirect)
	Domain      string    // recipient domain, lower-case ASCII: the bucket key
	Name        string    // optional display name, may be empty; Render cuts it at MaxNameLen characters
	Plan        string    // optional plan name, may be empty; Render cuts it at MaxPlanLen characters
	CancelToken string    // token of the cancellation link; reused across revisions
	ClaimedAt   time.Time // when the claim committed (for claim-to-commit latency)

	// What the notice says (issue 21). Each is optional: the pass fills it
	// where the source has the column, already validated.
	AnchorAt      time.Time      // the kind's anchor (renews_at, trial_ends_at, ...); zero: RenewsAt
	Amount        string         // the charge in major units as a decimal ("12.99"); "" when unknown
	Currency      string         // ISO 4217 code of Amount, upper case ("EUR"); "" when unknown
	Interval      string         // "day", "week", "month" or "year"; "" when unknown
	IntervalCount int            // how many Intervals a billing period lasts; 0 means 1
	Locale        string         // BCP 47 tag the pass resolved (fallbacks applied); "": the renderer's default
	TimeZone      *time.Location // the recipient's zone, resolved; nil: the renderer's default

	// DeliverBy is the last instant at which the notice is still of use to
	// its recipient: the earlier of its window's close and, for a channel
	// that keeps quiet hours, the start of the recipient's next quiet
	// hours. A provider that can be told how long to keep trying (Twilio's
	// ValidityPeriod) is told to give up then. Zero: no bound.
	DeliverBy time.Time

	// Attempt numbers the claims of this notice (issue 19): 1 for the
	// first claim, incremented by each re-claim. It travels beside the key
	// wherever a provider echoes data, so an event settles only its own
	// attempt. 0 means unknown (treated as 1).
	Attempt int
}

// Message is a rendered notice: the RFC 5322 bytes plus what the senders
// need beside them.
type Message struct {
	Notice    Notice
	From      string // envelope and header From address (addr-spec only)
	MessageID string // with angle brackets: <32hex@domain>
	Subject   string
	Text      string
	HTML      string
	Raw       []byte // complete RFC 5322 message, CRLF line endings
}

// Renderer turns a notice into the message the senders take: what the
// notice says is internal/message's concern, which implements it, so that
// internal/send holds no template. send's Dispatcher calls Render in its
// workers, so a Renderer must be safe for concurrent use; the same notice
// must always render to the same bytes.
type Renderer interface {
	// Render returns n's message, or an error for a notice that no retry
	// can render (the Dispatcher makes it a Permanent *Error).
	Render(n Notice) (*Message, error)
	// MessageID returns the Message-ID, with angle brackets, that the
	// notice of key has: what a Result carries for a notice that was never
	// rendered.
	MessageID(key string) string
}

// A TextRenderer renders the short plain body a text channel (sms) sends
// instead of a Message: internal/message implements it (RenderSMS). It
// must be safe for concurrent use and read no clock.
type TextRenderer interface {
	RenderSMS(n Notice) (string, error)
}

// Texts is the Renderer of a text channel: each notice's Message carries
// tr's body as Text, and as Raw, the bytes handed to the provider (what
// send's Dispatcher digests); a text has no Message-ID. With it a text
// channel's stage runs the same Dispatcher as email's.
func Texts(tr TextRenderer) Renderer { return texts{tr} }

type texts struct{ tr TextRenderer }

func (t texts) Render(n Notice) (*Message, error) {
	body, err := t.tr.RenderSMS(n)
	if err != nil {
		return nil, err
	}
	return &Message{Notice: n, Text: body, Raw: []byte(body)}, nil
}

func (texts) MessageID(string) string { return "" }
