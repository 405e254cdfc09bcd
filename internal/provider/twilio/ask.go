package twilio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"scan/internal/ask"
	"scan/internal/ledger"
	"scan/internal/provider"
)

// IndexDelay is how long after a claim a Message Twilio created must be
// listed by its Messages API; a claim older than this whose message is
// not listed was never created ("not sent").
const IndexDelay = 10 * time.Minute

// maxListPages bounds how many pages (of 1000) About reads for one claim.
const maxListPages = 20

// Asker is `scan reconcile --ask twilio`: an ask.Provider over the
// Messages API of the Client's account. It is not safe for concurrent use.
type Asker struct{ c *Client }

// NewAsker returns the Asker of c's account.
func NewAsker(c *Client) *Asker { return &Asker{c: c} }

// Name is the provider's name.
func (a *Asker) Name() string { return string(Name) }

// message is the part of a Message resource About reads
// (https://www.twilio.com/docs/messaging/api/message-resource#message-properties).
type message struct {
	SID         string `json:"sid"`
	Body        string `json:"body"`
	Status      string `json:"status"`
	ErrorCode   *int   `json:"error_code"`
	DateCreated string `json:"date_created"` // RFC 2822
}

// messagePage is one page of "Read multiple Message resources".
type messagePage struct {
	Messages    []message `json:"messages"`
	NextPageURI string    `json:"next_page_uri"`
}

// About settles one sms claim from Twilio's record: by its Message sid
// when the pass recorded one, else by listing the account's Messages
// created since the day of the claim and matching the SHA-256 of each body
// against c.Digest (an sms carries no key; a number is not kept, so the
// list is not filtered by To). Found: its status as a status callback
// would say it (DecodeCallback). Its sid not found after IndexDelay: one
// "not sent" settlement (retry); before: Pending.
//
// A claim with neither a sid nor a digest (the pass died before it
// recorded the attempt's outcome), or whose body matches no listed
// Message, is Unknown and stays in quarantine: Twilio may change a body
// it sends (a Messaging Service's opt-out text, a smart-encoded
// character), so not finding ours is no evidence that it was never sent,
// and a retry on that ground could text the customer twice.
func (a *Asker) About(ctx context.Context, c ask.Claim, now time.Time) (ask.Answer, error) {
	if c.ProviderID == "" && len(c.Digest) != sha256.Size {
		return ask.Answer{Unknown: "no Message sid and no digest of the body recorded: nothing to look it up by"}, nil
	}
	m, found, err := a.find(ctx, c)
	if err != nil {
		return ask.Answer{}, err
	}
	if !found {
		if now.Sub(c.ClaimedAt) < IndexDelay {
			return ask.Answer{Pending: true}, nil
		}
		if c.ProviderID == "" {
			return ask.Answer{Unknown: "no listed Message has this body (Twilio may have changed it): not evidence either way"}, nil
		}
		return ask.Answer{Settlements: []ledger.Settlement{{Key: c.Key, Attempt: c.Attempt, To: ledger.Retry,
			Kind: ledger.KindNotSent, Event: string(provider.Twilio) + "/not_found", Detail: "no Message with the sid the pass recorded"}}}, nil
	}
	form := url.Values{"MessageSid": {m.SID}, "MessageStatus": {m.Status}}
	if m.ErrorCode != nil {
		form.Set("ErrorCode", strconv.Itoa(*m.ErrorCode))
	}
	s, ok, err := DecodeCallback(url.Values{KeyParam: {c.Key}, AttemptParam: {strconv.Itoa(c.Attempt)}}, form)
	if err != nil || !ok {
		return ask.Answer{Pending: true}, err
	}
	s.At, _ = time.Parse(time.RFC1123Z, m.DateCreated)
	return ask.Answer{Settlements: []ledger.Settlement{s}}, nil
}

// find returns the claim's Message.
func (a *Asker) find(ctx context.Context, c ask.Claim) (message, bool, error) {
	if c.ProviderID != "" {
		var m message
		status, err := a.get(ctx, a.c.accountURL()+"/Messages/"+url.PathEscape(c.ProviderID)+".json", &m)
		if status == http.StatusNotFound {
			return message{}, false, nil
		}
		return m, err == nil, err
	}
	q := url.Values{"DateSent>": {c.ClaimedAt.UTC().Add(-24 * time.Hour).Format(time.DateOnly)}, "PageSize": {"1000"}}
	next := a.c.accountURL() + "/Messages.json?" + q.Encode()
	for range maxListPages {
		var p messagePage
		if _, err := a.get(ctx, next, &p); err != nil {
			return message{}, false, err
		}
		for _, m := range p.Messages {
			if sum := sha256.Sum256([]byte(m.Body)); bytes.Equal(sum[:], c.Digest) {
				return m, true, nil
			}
		}
		if p.NextPageURI == "" {
			return message{}, false, nil
		}
		next = strings.TrimRight(a.c.cfg.BaseURL, "/") + p.NextPageURI
	}
	return message{}, false, fmt.Errorf("twilio: more than %d pages of Messages since the claim of %.12s", maxListPages, c.Key)
}

// get reads one JSON resource into v and returns the HTTP status.
func (a *Asker) get(ctx context.Context, u string, v any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, a.c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth(a.c.cfg.AccountSID, a.c.cfg.AuthToken)
	req.Header.Set("Accept", "application/json")
	resp, err := a.c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("twilio: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("twilio: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiAnswer
		_ = json.Unmarshal(body, &e)
		return resp.StatusCode, &APIError{Status: resp.StatusCode, Code: e.Code}
	}
	return resp.StatusCode, json.Unmarshal(body, v)
}

// Since is unsupported: Twilio's record names no notice key, and after a
// restore the ledger has no digest to match a body by.
func (a *Asker) Since(context.Context, time.Time, func(ledger.Settlement) error) error {
	return ask.ErrUnsupported
}

// AskSpec is `--ask twilio`: the Messages API of the account in
// TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (TWILIO_API_URL overrides the
// base URL, and New checks it), asked about the sms claims in quarantine.
var AskSpec = ask.Spec{
	Settings: func(getenv func(string) string) error {
		for _, v := range []string{"TWILIO_ACCOUNT_SID", AuthTokenVar} {
			if getenv(v) == "" {
				return &ask.ConfigError{Field: v, Msg: "required with --ask twilio"}
			}
		}
		return nil
	},
	New: func(getenv func(string) string, _ ask.ClientConfig) (ask.Provider, error) {
		c, err := New(AccountConfig(getenv)) // a *ConfigError is an ask.ConfigError: both are usage.Error
		if err != nil {
			return nil, err
		}
		return NewAsker(c), nil
	},
}
