package sendgrid

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"scan/internal/ask"
	"scan/internal/ledger"
	"scan/internal/notice"
)

// SendGrid's Email Logs API, as its reference documents it
// (https://www.twilio.com/docs/sendgrid/api-reference/email-logs, and the
// OpenAPI description in twilio/sendgrid-oai, spec/yaml/tsg_logs_v3.yaml):
//
//   - POST /v3/logs {"query": ..., "limit": 1..1000}: the messages
//     matching the query (no pagination); sg_message_id takes only "=",
//     sg_message_id_created_at takes < <= > >= against TIMESTAMP "RFC3339";
//   - GET /v3/logs/{sg_message_id}: one message, its custom_args (our
//     unique_args: notice_key, notice_attempt) and up to 100 events,
//     shaped as the Event Webhook's; 404 when there is no such message;
//   - Authorization: Bearer API_KEY; 403 when the key or the account
//     cannot read Email Logs.
//
// Email Logs keep 30 days of events.
const (
	API = "https://api.sendgrid.com"
	// Delay is how long after a claim Email Logs must have listed
	// the message before its absence counts as "not sent". SendGrid says
	// "near real time" without a bound; we take Mailgun's documented half
	// hour (MailgunDelay) as the margin.
	Delay = 30 * time.Minute
	// Retention is Email Logs' retention: "30 days of email event
	// history".
	Retention     = 30 * 24 * time.Hour
	sendgridLimit = 1000
	// sendgridWindow is how long after its claim a message is looked for:
	// a pass hands a claimed message over within its time budget.
	sendgridWindow = 6 * time.Hour
)

// ErrNoEmailLogs is what SendGrid answers (HTTP 403) when the account or
// the API key cannot read Email Logs; it wraps ask.ErrUnsupported.
var ErrNoEmailLogs = fmt.Errorf("%w: SendGrid refused the Email Logs API (HTTP 403): the account has no Email Logs, or the API key lacks the email activity read scope; ask the provider with another key, or settle from the Event Webhook (scan receive) instead", ask.ErrUnsupported)

// Asker asks SendGrid's Email Logs API. Email Logs cannot be searched
// by unique_args, nor by the X-Message-ID a quarantined claim never got
// to record, so About reads every message SendGrid created in the hours
// after the claim (the listing, then each message's events, which carry
// its custom_args) and finds the claim's by its notice_key: one scan per
// hour of claims, kept for the other claims of that hour. That costs a
// request per message sent in those hours, paced by ask.ClientConfig.Rate.
// Safe for use by one goroutine at a time.
type Asker struct {
	c       *ask.Client
	byKey   map[string][]ledger.Settlement // what the scans found, by notice key
	scanned map[time.Time]bool             // the hours of claims scanned
}

// NewAsker returns SendGrid's provider.
func NewAsker(apiKey string, cfg ask.ClientConfig) (*Asker, error) {
	if apiKey == "" {
		return nil, errors.New("ask: SendGrid API key is empty")
	}
	c, err := ask.NewClient(string(Name), API, cfg, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+apiKey) })
	if err != nil {
		return nil, err
	}
	return &Asker{c: c, byKey: map[string][]ledger.Settlement{}, scanned: map[time.Time]bool{}}, nil
}

// Name is the provider's name.
func (s *Asker) Name() string { return string(Name) }

// Retention is the package's Retention: a claim older than that is never asked about.
func (s *Asker) Retention() time.Duration { return Retention }

type sendgridMessage struct {
	SGMessageID string `json:"sg_message_id"`
	CreatedAt   string `json:"sg_message_id_created_at"`
}

// About scans the messages created from the claim's hour (less
// ledger.ClockSkew) to sendgridWindow after it, unless an earlier claim
// of that hour did, and answers from the events of the claim's key; none
// of its attempt is notFound (Delay, Retention).
func (s *Asker) About(ctx context.Context, c ask.Claim, now time.Time) (ask.Answer, error) {
	hour := c.ClaimedAt.UTC().Truncate(time.Hour)
	if !s.scanned[hour] {
		to := hour.Add(sendgridWindow)
		if now.Before(to) {
			to = now
		}
		err := s.span(ctx, hour.Add(-ledger.ClockSkew), to, func(st ledger.Settlement) error {
			s.byKey[st.Key] = append(s.byKey[st.Key], st)
			return nil
		})
		if err != nil {
			return ask.Answer{}, err
		}
		s.scanned[hour] = true
	}
	ss := s.byKey[c.Key]
	if ask.Covers(c, ss) {
		return ask.Answer{Settlements: ss}, nil
	}
	a := ask.NotFound(string(Name), c, now, Delay, Retention)
	a.Settlements = append(ss, a.Settlements...)
	return a, nil
}

// Since calls fn with each event of every message of ours SendGrid
// created from since on. A span with more messages than one listing
// returns (1000) is halved until each half fits.
func (s *Asker) Since(ctx context.Context, since time.Time, fn func(ledger.Settlement) error) error {
	return s.span(ctx, since, s.c.Now().UTC(), fn)
}

func (s *Asker) span(ctx context.Context, from, to time.Time, fn func(ledger.Settlement) error) error {
	msgs, err := s.list(ctx, from, to)
	if err != nil {
		return err
	}
	if len(msgs) >= sendgridLimit {
		if to.Sub(from) < 2*time.Second {
			return fmt.Errorf("sendgrid: more than %d messages within %v of %s: Email Logs cannot list them", sendgridLimit, to.Sub(from), from.Format(time.RFC3339))
		}
		mid := from.Add(to.Sub(from) / 2).Truncate(time.Second)
		if err := s.span(ctx, from, mid, fn); err != nil {
			return err
		}
		return s.span(ctx, mid, to, fn)
	}
	for _, m := range msgs {
		ss, err := s.message(ctx, m.SGMessageID)
		if err != nil {
			return err
		}
		for _, st := range ss {
			if st.Key == "" {
				continue // not one of ours
			}
			if err := fn(st); err != nil {
				return err
			}
		}
	}
	return nil
}

// list returns the messages created in [from, to).
func (s *Asker) list(ctx context.Context, from, to time.Time) ([]sendgridMessage, error) {
	query := fmt.Sprintf(`sg_message_id_created_at >= TIMESTAMP %q AND sg_message_id_created_at < TIMESTAMP %q`,
		from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	var answer struct {
		Messages []sendgridMessage `json:"messages"`
	}
	status, err := s.c.Do(ctx, http.MethodPost, "/v3/logs", nil, map[string]any{"query": query, "limit": sendgridLimit}, &answer)
	if status == http.StatusForbidden {
		return nil, ErrNoEmailLogs
	}
	return answer.Messages, err
}

// message reads one message's events as the Event Webhook's, with the
// message's custom_args (notice_key, notice_attempt) on each, as the
// webhook puts unique_args.
func (s *Asker) message(ctx context.Context, id string) ([]ledger.Settlement, error) {
	var m struct {
		CustomArgs map[string]string `json:"custom_args"`
		Events     []map[string]any  `json:"events"`
	}
	status, err := s.c.Do(ctx, http.MethodGet, "/v3/logs/"+url.PathEscape(id), nil, nil, &m)
	switch {
	case status == http.StatusNotFound:
		return nil, nil // listed, then gone: past the retention
	case status == http.StatusForbidden:
		return nil, ErrNoEmailLogs
	case err != nil:
		return nil, err
	}
	hooks := make([]any, 0, len(m.Events))
	for _, e := range m.Events {
		if k, ok := m.CustomArgs[notice.KeyField]; ok {
			e[notice.KeyField] = k
		}
		if a, ok := m.CustomArgs[notice.AttemptField]; ok {
			e[notice.AttemptField] = a
		}
		if _, ok := e["sg_message_id"]; !ok {
			e["sg_message_id"] = id
		}
		hooks = append(hooks, e)
	}
	return ask.Decode(string(Name), Decode, hooks...)
}

// The settings of `--ask sendgrid`.
const (
	APIKeyVar = "SENDGRID_API_KEY"
	APIURLVar = "SENDGRID_API_URL"
)

// AskSpec is `--ask sendgrid`: the Email Logs API with the key in
// APIKeyVar. Email Logs give each message's custom_args, the unique_args
// that messages carry only with the policy's provider sendgrid.
var AskSpec = ask.Spec{
	Settings: func(getenv func(string) string) error {
		if getenv(APIKeyVar) == "" {
			return &ask.ConfigError{Field: APIKeyVar, Msg: "required with --ask sendgrid: a key with read access to Email Logs"}
		}
		return nil
	},
	BaseURLVar: APIURLVar,
	ByMetadata: true,
	New: func(getenv func(string) string, cfg ask.ClientConfig) (ask.Provider, error) {
		return NewAsker(getenv(APIKeyVar), cfg)
	},
}
