package mailgun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"scan/internal/ask"
	"scan/internal/ledger"
)

// Mailgun's Events API, as its reference documents it
// (https://documentation.mailgun.com/docs/mailgun/api-reference/openapi-final/tag/Events,
// https://documentation.mailgun.com/docs/mailgun/user-manual/events/):
// GET /v3/{domain}/events with begin (epoch seconds), ascending=yes,
// limit (at most 300) and filters such as message-id; basic auth as "api"
// with the API key. An answer is {"items": [...], "paging": {"next":
// URL, ...}}; the pages are followed until one comes back empty. Each
// item is the event-data of the webhooks, so reconcile's mailgun rules
// read it.
const (
	API = "https://api.mailgun.net"
	// Delay is Mailgun's documented delay before its event store
	// is complete: events reach it by different routes, and the Event
	// Polling section of the events guide
	// (https://documentation.mailgun.com/docs/mailgun/user-manual/events/#event-polling)
	// takes a page as trustworthy only once its events are half an hour
	// old (mailgun-go's PollEvents starts half an hour back for the same
	// reason: events.go). Before it, no event is no evidence.
	Delay = 30 * time.Minute
	// Retention is the shortest retention of Mailgun's events: one
	// day on a free account (up to 30 days on paid plans).
	Retention       = 24 * time.Hour
	mailgunLimit    = 300
	mailgunMaxPages = 100
)

// Asker asks Mailgun's Events API about a message by its Message-ID
// (Mailgun keeps the Message-ID header a message was submitted with as its
// message id). Safe for use by one goroutine at a time.
type Asker struct {
	c      *ask.Client
	domain string
}

// NewAsker returns Mailgun's provider for the sending domain.
func NewAsker(apiKey, domain string, cfg ask.ClientConfig) (*Asker, error) {
	switch {
	case apiKey == "":
		return nil, errors.New("ask: Mailgun API key is empty")
	case domain == "" || strings.ContainsAny(domain, "/?#"):
		return nil, fmt.Errorf("ask: Mailgun domain %q is not a domain", domain)
	}
	c, err := ask.NewClient(string(Name), API, cfg, func(r *http.Request) { r.SetBasicAuth("api", apiKey) })
	if err != nil {
		return nil, err
	}
	return &Asker{c: c, domain: domain}, nil
}

// Name is the provider's name.
func (m *Asker) Name() string { return string(Name) }

// Retention is the package's Retention: a claim older than that is never asked about.
func (m *Asker) Retention() time.Duration { return Retention }

// About lists the events of c's Message-ID since the claim (less
// ledger.ClockSkew); none of c's attempt is notFound (Delay,
// Retention).
func (m *Asker) About(ctx context.Context, c ask.Claim, now time.Time) (ask.Answer, error) {
	id := strings.Trim(c.ProviderID, "<>")
	if id == "" {
		id = c.MessageID
	}
	if id == "" {
		return ask.Answer{Unknown: "no Message-ID recorded"}, nil
	}
	var ss []ledger.Settlement
	err := m.events(ctx, url.Values{"message-id": {id}}, c.ClaimedAt.Add(-ledger.ClockSkew), func(s ledger.Settlement) error {
		ss = append(ss, s)
		return nil
	})
	if err != nil {
		return ask.Answer{}, err
	}
	if ask.Covers(c, ss) {
		return ask.Answer{Settlements: ss}, nil
	}
	a := ask.NotFound(string(Name), c, now, Delay, Retention)
	a.Settlements = append(ss, a.Settlements...)
	return a, nil
}

// Since calls fn with each event Mailgun recorded from since on, oldest
// first: every message accepted, and everything that happened to it.
func (m *Asker) Since(ctx context.Context, since time.Time, fn func(ledger.Settlement) error) error {
	return m.events(ctx, url.Values{}, since, fn)
}

// events walks the pages of the events matching filter from begin on.
func (m *Asker) events(ctx context.Context, filter url.Values, begin time.Time, fn func(ledger.Settlement) error) error {
	q := filter
	q.Set("begin", strconv.FormatInt(begin.Unix(), 10))
	q.Set("ascending", "yes")
	q.Set("limit", strconv.Itoa(mailgunLimit))
	path := "/v3/" + url.PathEscape(m.domain) + "/events"
	for page := 0; page < mailgunMaxPages; page++ {
		var answer struct {
			Items  []json.RawMessage `json:"items"`
			Paging struct {
				Next string `json:"next"`
			} `json:"paging"`
		}
		if _, err := m.c.Do(ctx, http.MethodGet, path, q, nil, &answer); err != nil {
			return err
		}
		if len(answer.Items) == 0 {
			return nil
		}
		hooks := make([]any, len(answer.Items))
		for i, it := range answer.Items {
			hooks[i] = map[string]json.RawMessage{"event-data": it}
		}
		ss, err := ask.Decode(string(Name), Decode, hooks...)
		if err != nil {
			return err
		}
		for _, s := range ss {
			if err := fn(s); err != nil {
				return err
			}
		}
		if path, q, err = m.next(answer.Paging.Next); err != nil {
			return err
		}
	}
	return fmt.Errorf("mailgun: more than %d pages of events: stopped (use a later --since)", mailgunMaxPages)
}

// next turns a paging URL into a path and query on the API's own base:
// the API key is never sent to another host.
func (m *Asker) next(raw string) (string, url.Values, error) {
	u, err := url.Parse(raw)
	base := m.c.Base()
	if err != nil || u.Host != base.Host || !strings.HasPrefix(u.Path, base.Path+"/") {
		return "", nil, fmt.Errorf("mailgun: paging URL %q is not on %s", raw, base.Host)
	}
	return strings.TrimPrefix(u.Path, base.Path), u.Query(), nil
}

// The settings of `--ask mailgun`.
const (
	APIKeyVar = "MAILGUN_API_KEY"
	DomainVar = "MAILGUN_DOMAIN"
	APIURLVar = "MAILGUN_API_URL"
)

// AskSpec is `--ask mailgun`: the Events API of the sending domain in
// DomainVar, with the key in APIKeyVar.
var AskSpec = ask.Spec{
	Settings: func(getenv func(string) string) error {
		if getenv(APIKeyVar) == "" {
			return &ask.ConfigError{Field: APIKeyVar, Msg: "required with --ask mailgun"}
		}
		if getenv(DomainVar) == "" {
			return &ask.ConfigError{Field: DomainVar, Msg: "required with --ask mailgun: the sending domain the notices go through"}
		}
		return nil
	},
	BaseURLVar: APIURLVar,
	New: func(getenv func(string) string, cfg ask.ClientConfig) (ask.Provider, error) {
		p, err := NewAsker(getenv(APIKeyVar), getenv(DomainVar), cfg)
		if err != nil {
			return nil, &ask.ConfigError{Field: DomainVar, Msg: err.Error()}
		}
		return p, nil
	},
}
