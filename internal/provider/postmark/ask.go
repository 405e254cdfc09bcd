package postmark

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"scan/internal/ask"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/reconcile"
)

// Postmark's Messages API, as its reference documents it
// (https://postmarkapp.com/developer/api/messages-api):
//
//   - GET /messages/outbound?count=&offset=[&metadata_KEY=VALUE][&fromdate=&todate=]:
//     outbound message search, at most 500 a page and 10,000 in all
//     (count + offset), newest first; metadata_ filters by a metadata
//     field (the official postmark.js client passes "metadata_..."
//     parameters through: src/client/models/messages/MessageFilteringParameters.ts);
//     fromdate and todate are Eastern Time;
//   - GET /messages/outbound/{MessageID}/details: the message with its
//     MessageEvents (Delivered, Transient, Bounced, Opened, LinkClicked,
//     SubscriptionChanged; https://postmarkapp.com/blog/messageevents-every-message-event-in-one-api-call);
//   - GET /bounces/{BounceID}: a bounce as the Bounce webhook carries it
//     (Type, TypeCode, Details; https://postmarkapp.com/developer/api/bounce-api).
//
// Every request carries X-Postmark-Server-Token. Messages are kept for
// the server's retention, 45 days by default and as little as 7.
const (
	API = "https://api.postmarkapp.com"
	// Delay is how long after a claim Postmark's search must have
	// found the message before its absence counts as "not sent". Postmark
	// documents no indexing delay (a message is in the Messages API as
	// soon as Postmark accepted it, Status Queued); we take Mailgun's
	// documented half hour (mailgun.Delay) as the margin, so that a slow
	// hand-over is never taken for a message that did not leave.
	Delay = 30 * time.Minute
	// Retention is the shortest retention Postmark lets a server
	// have (7 days; "retention can be customized from 7 to 365 days").
	Retention         = 7 * 24 * time.Hour
	postmarkPage      = 500
	postmarkMaxSearch = 10000
)

// Asker asks Postmark's Messages API. Messages are found by the
// metadata notice_key that the pass sets (X-PM-Metadata-notice_key, with
// the policy's provider: postmark) and matched to an attempt by
// notice_attempt. Safe for use by one goroutine at a time.
type Asker struct {
	c *ask.Client
}

// NewAsker returns Postmark's provider; token is a server token.
func NewAsker(token string, cfg ask.ClientConfig) (*Asker, error) {
	if token == "" {
		return nil, errors.New("ask: Postmark server token is empty")
	}
	c, err := ask.NewClient(string(Name), API, cfg, func(r *http.Request) { r.Header.Set("X-Postmark-Server-Token", token) })
	if err != nil {
		return nil, err
	}
	return &Asker{c: c}, nil
}

// Name is the provider's name.
func (p *Asker) Name() string { return string(Name) }

// Retention is the package's Retention: a claim older than that is never asked about.
func (p *Asker) Retention() time.Duration { return Retention }

type postmarkMessage struct {
	MessageID     string            `json:"MessageID"`
	Status        string            `json:"Status"`
	ReceivedAt    string            `json:"ReceivedAt"`
	Metadata      map[string]string `json:"Metadata"`
	MessageEvents []struct {
		Type       string         `json:"Type"`
		ReceivedAt string         `json:"ReceivedAt"`
		Details    map[string]any `json:"Details"`
	} `json:"MessageEvents"`
}

type postmarkSearch struct {
	TotalCount int               `json:"TotalCount"`
	Messages   []postmarkMessage `json:"Messages"`
}

// About searches the messages tagged with c's key, reads each one's
// events, and answers from them; no message of c's attempt is notFound
// (Delay, Retention).
func (p *Asker) About(ctx context.Context, c ask.Claim, now time.Time) (ask.Answer, error) {
	q := url.Values{"count": {"50"}, "offset": {"0"}, "metadata_" + notice.KeyField: {c.Key}}
	var found postmarkSearch
	if _, err := p.c.Do(ctx, http.MethodGet, "/messages/outbound", q, nil, &found); err != nil {
		return ask.Answer{}, err
	}
	var ss []ledger.Settlement
	for _, m := range found.Messages {
		if m.Metadata[notice.KeyField] != c.Key {
			continue // the search matched something else: never take it for ours
		}
		got, err := p.message(ctx, m)
		if err != nil {
			return ask.Answer{}, err
		}
		ss = append(ss, got...)
	}
	if ask.Covers(c, ss) {
		return ask.Answer{Settlements: ss}, nil
	}
	a := ask.NotFound(string(Name), c, now, Delay, Retention)
	a.Settlements = append(ss, a.Settlements...)
	return a, nil
}

// message returns what one message of ours says: its acceptance (the
// search found it, so Postmark took it) and each of its events, read as
// Postmark's webhooks are.
func (p *Asker) message(ctx context.Context, m postmarkMessage) ([]ledger.Settlement, error) {
	var d postmarkMessage
	if _, err := p.c.Do(ctx, http.MethodGet, "/messages/outbound/"+url.PathEscape(m.MessageID)+"/details", nil, nil, &d); err != nil {
		return nil, err
	}
	attempt, _ := strconv.Atoi(m.Metadata[notice.AttemptField])
	at := postmarkTime(m.ReceivedAt)
	ss := []ledger.Settlement{{Key: m.Metadata[notice.KeyField], ProviderID: m.MessageID, To: ledger.Sent, Kind: ledger.KindAccepted,
		Event: string(Name) + ":api/" + reconcile.Lower(m.Status), At: at, Attempt: attempt, Detail: "status=" + m.Status}}
	var hooks []any
	for _, e := range d.MessageEvents {
		base := map[string]any{"MessageID": m.MessageID, "Metadata": m.Metadata}
		switch e.Type {
		case "Delivered":
			base["RecordType"], base["DeliveredAt"], base["Details"] = "Delivery", e.ReceivedAt, e.Details["DeliveryMessage"]
		case "Opened":
			base["RecordType"], base["ReceivedAt"] = "Open", e.ReceivedAt
		case "LinkClicked":
			base["RecordType"], base["ReceivedAt"] = "Click", e.ReceivedAt
		case "Transient":
			ss = append(ss, ledger.Settlement{Key: m.Metadata[notice.KeyField], ProviderID: m.MessageID, To: ledger.Sent, Kind: ledger.KindDeferred,
				Event: string(Name) + ":api/transient", At: postmarkTime(e.ReceivedAt), Attempt: attempt})
			continue
		case "Bounced":
			id, _ := e.Details["BounceID"].(float64)
			var b map[string]any
			if _, err := p.c.Do(ctx, http.MethodGet, "/bounces/"+strconv.FormatInt(int64(id), 10), nil, nil, &b); err != nil {
				return nil, err
			}
			b["RecordType"], b["MessageID"], b["Metadata"] = "Bounce", m.MessageID, m.Metadata
			base = b
		default:
			continue // SubscriptionChanged: proves nothing of delivery
		}
		hooks = append(hooks, base)
	}
	got, err := ask.Decode(string(Name), Decode, hooks...)
	return append(ss, got...), err
}

// Since calls fn with each message of ours Postmark accepted from since
// on (newest first, as the search returns them), and each one's events.
// The search reaches at most 10,000 messages: more is an error that says
// so (run it again with a later since).
func (p *Asker) Since(ctx context.Context, since time.Time, fn func(ledger.Settlement) error) error {
	et, err := time.LoadLocation("America/New_York")
	if err != nil {
		return fmt.Errorf("postmark: Eastern Time: %w", err)
	}
	from := since.In(et).Format("2006-01-02T15:04:05")
	for offset := 0; ; offset += postmarkPage {
		if offset+postmarkPage > postmarkMaxSearch {
			return fmt.Errorf("postmark: more than %d messages since %s: the Messages API cannot list them all (use a later --since)", postmarkMaxSearch, since.UTC().Format(time.RFC3339))
		}
		q := url.Values{"count": {strconv.Itoa(postmarkPage)}, "offset": {strconv.Itoa(offset)}, "fromdate": {from}}
		var page postmarkSearch
		if _, err := p.c.Do(ctx, http.MethodGet, "/messages/outbound", q, nil, &page); err != nil {
			return err
		}
		for _, m := range page.Messages {
			if !notice.ValidKey(m.Metadata[notice.KeyField]) {
				continue // not one of ours
			}
			ss, err := p.message(ctx, m)
			if err != nil {
				return err
			}
			for _, s := range ss {
				if err := fn(s); err != nil {
					return err
				}
			}
		}
		if len(page.Messages) < postmarkPage {
			return nil
		}
	}
}

// postmarkTime reads Postmark's timestamps (RFC 3339 with an offset, as
// 2014-02-14T11:13:10.8054242-05:00); the zero time when unreadable.
func postmarkTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// The settings of `--ask postmark`.
const (
	TokenVar  = "POSTMARK_SERVER_TOKEN"
	APIURLVar = "POSTMARK_API_URL"
)

// AskSpec is `--ask postmark`: the Messages API of the server whose token
// is in TokenVar, searched by the metadata the policy's provider postmark
// adds.
var AskSpec = ask.Spec{
	Settings: func(getenv func(string) string) error {
		if getenv(TokenVar) == "" {
			return &ask.ConfigError{Field: TokenVar, Msg: "required with --ask postmark: a server token of the server the notices go through"}
		}
		return nil
	},
	BaseURLVar: APIURLVar,
	ByMetadata: true,
	New: func(getenv func(string) string, cfg ask.ClientConfig) (ask.Provider, error) {
		return NewAsker(getenv(TokenVar), cfg)
	},
}
