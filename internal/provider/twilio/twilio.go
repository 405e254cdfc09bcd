// Package twilio is scan's sms channel through Twilio's Messages API: the
// client that creates one Message per notice (Client, a send.Sender), the
// classification of Twilio's answers and error codes into send's classes
// (Outcome), the X-Twilio-Signature check of status callbacks
// (VerifySignature, Webhook) and their decoding into ledger.Settlements
// (DecodeCallback), and the Messages API asked for --ask (Asker). It holds no queue and touches no database; the body
// and its GSM-7/UCS-2 segments are package message's (RenderSMS,
// SMSSegments).
//
// net/http, not github.com/twilio/twilio-go: sending is one form-encoded
// POST and one JSON answer, and the pipeline needs what the SDK's
// generated client does not give: a context per request (the pass's
// shutdown and a timeout per send), no retry of its own (Twilio has no
// idempotency key, so a retried request after a lost answer may send the
// message twice), and the transport's error told apart from the answer's
// (refused before sending is a retry, a lost answer is quarantine).
package twilio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"scan/internal/clock"
	"scan/internal/notice"
	"scan/internal/provider"
	"scan/internal/send"
	"scan/internal/usage"
)

// Name is the provider's name.
const Name = provider.Twilio

// DefaultBaseURL is Twilio's REST API.
const DefaultBaseURL = "https://api.twilio.com"

// DefaultTimeout bounds one request.
const DefaultTimeout = 15 * time.Second

// Config configures a Client. AccountSID, AuthToken and one of From or
// MessagingServiceSID are required.
type Config struct {
	AccountSID          string // TWILIO_ACCOUNT_SID (AC...)
	AuthToken           string // TWILIO_AUTH_TOKEN; never logged
	From                string // TWILIO_FROM: an E.164 number or alphanumeric sender id
	MessagingServiceSID string // TWILIO_MESSAGING_SERVICE_SID (MG...); takes precedence over From in Twilio
	BaseURL             string // TWILIO_API_URL; default DefaultBaseURL
	// StatusCallback is SCAN_TWILIO_STATUS_CALLBACK, the public URL of
	// scan receive's /events/twilio; each request names it with the
	// notice's key and attempt added as query parameters (KeyParam,
	// AttemptParam). "": no callback.
	StatusCallback string
	Timeout        time.Duration // per request; default DefaultTimeout
	HTTPClient     *http.Client  // default: one with Timeout and no redirects
	// Clock gives the instant each request's ValidityPeriod is counted
	// from; default clock.System.
	Clock clock.Clock
}

// AccountConfig reads the account's settings (TWILIO_ACCOUNT_SID,
// TWILIO_AUTH_TOKEN, TWILIO_FROM, TWILIO_MESSAGING_SERVICE_SID,
// TWILIO_API_URL) from getenv, as the sms sender and `--ask twilio` take
// them; New checks them.
func AccountConfig(getenv func(string) string) Config {
	return Config{AccountSID: getenv("TWILIO_ACCOUNT_SID"), AuthToken: getenv(AuthTokenVar),
		From: getenv("TWILIO_FROM"), MessagingServiceSID: getenv("TWILIO_MESSAGING_SERVICE_SID"),
		BaseURL: getenv("TWILIO_API_URL")}
}

// The bounds of a Message's ValidityPeriod, in seconds: Twilio keeps a
// message it could not yet hand to the carrier for at most this long, then
// drops it as undelivered (error 30036), and refuses a value outside them
// (error 21624/90007: "between 1 and 36,000 seconds",
// https://www.twilio.com/docs/api/errors/90007).
const (
	MinValidity = 1 * time.Second
	MaxValidity = 36000 * time.Second
)

// ErrTooLate is the cause of the Transient *send.Error of a notice whose
// DeliverBy leaves less than MinValidity: nothing is handed over, so the
// text can never land after its window closed or inside quiet hours; the
// claim goes to retry and a later pass takes it while its window is open.
var ErrTooLate = errors.New("twilio: less than the least ValidityPeriod left before the notice's deadline")

// The query parameters the status callback URL carries.
const (
	KeyParam     = notice.KeyField     // the notice key
	AttemptParam = notice.AttemptField // the attempt number
)

// ConfigError names a bad field of Config.
type ConfigError = usage.Error

// Client creates Messages. It is safe for concurrent use.
type Client struct {
	cfg      Config
	endpoint string
	http     *http.Client
}

// New validates cfg and returns a Client. It makes no request.
func New(cfg Config) (*Client, error) {
	switch {
	case cfg.AccountSID == "":
		return nil, &ConfigError{Field: "TWILIO_ACCOUNT_SID", Msg: "required with channel sms"}
	case cfg.AuthToken == "":
		return nil, &ConfigError{Field: "TWILIO_AUTH_TOKEN", Msg: "required with channel sms"}
	case cfg.From == "" && cfg.MessagingServiceSID == "":
		return nil, &ConfigError{Field: "TWILIO_FROM", Msg: "set TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID"}
	}
	if strings.ContainsAny(cfg.AccountSID, "/?#%") {
		return nil, &ConfigError{Field: "TWILIO_ACCOUNT_SID", Msg: "not an account SID"}
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, &ConfigError{Field: "TWILIO_API_URL", Msg: "not an http(s) URL"}
	}
	if cfg.StatusCallback != "" {
		if u, err := url.Parse(cfg.StatusCallback); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, &ConfigError{Field: "SCAN_TWILIO_STATUS_CALLBACK", Msg: "not an http(s) URL"}
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cfg.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	c := &Client{cfg: cfg, http: hc}
	c.endpoint = c.accountURL() + "/Messages.json"
	return c, nil
}

// accountURL is the account's resource URL.
func (c *Client) accountURL() string {
	return strings.TrimRight(c.cfg.BaseURL, "/") + "/2010-04-01/Accounts/" + c.cfg.AccountSID
}

// Form returns the request body for an SMS to to with body, for the
// notice key and attempt: To, From or MessagingServiceSid, Body and
// StatusCallback ("Create a Message resource",
// https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource).
//
// validity, when positive, becomes ValidityPeriod in whole seconds (at most
// MaxValidity): how long Twilio may keep trying before it drops the message.
func (c *Client) Form(to, body, key string, attempt int, validity time.Duration) url.Values {
	f := url.Values{"To": {to}, "Body": {body}}
	if validity > 0 {
		f.Set("ValidityPeriod", strconv.Itoa(int(min(validity, MaxValidity)/time.Second)))
	}
	if c.cfg.MessagingServiceSID != "" {
		f.Set("MessagingServiceSid", c.cfg.MessagingServiceSID)
	} else {
		f.Set("From", c.cfg.From)
	}
	if c.cfg.StatusCallback != "" {
		f.Set("StatusCallback", CallbackURL(c.cfg.StatusCallback, key, attempt))
	}
	return f
}

// CallbackURL returns base with the notice's key and attempt added as
// query parameters.
func CallbackURL(base, key string, attempt int) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := u.Query()
	q.Set(KeyParam, key)
	q.Set(AttemptParam, strconv.Itoa(max(attempt, 1)))
	u.RawQuery = q.Encode()
	return u.String()
}

// Send creates the Message of m: m.Notice.To is the E.164 number and
// m.Text the body. Its outcomes (see Outcome): a Receipt with the Message
// sid; a Transient *send.Error (refused before Twilio took it: 429, a
// retryable code, no connection); a Permanent one (a permanent error
// code: 21211, 21610, ...); or an Unknown one (a timeout or lost answer:
// Twilio may have taken it, and it has no idempotency key, so the claim
// stays in quarantine and is never resent blindly).
//
// A notice with a DeliverBy carries ValidityPeriod up to it; one with less
// than MinValidity left is not sent (ErrTooLate).
func (c *Client) Send(ctx context.Context, m *notice.Message) (send.Receipt, error) {
	var validity time.Duration
	if !m.Notice.DeliverBy.IsZero() {
		validity = m.Notice.DeliverBy.Sub(c.cfg.Clock.Now()).Truncate(time.Second)
		if validity < MinValidity {
			return send.Receipt{}, &send.Error{Class: send.Transient, Err: fmt.Errorf("%w: %w", send.ErrNotAttempted, ErrTooLate)}
		}
	}
	form := c.Form(m.Notice.To, m.Text, m.Notice.Key, m.Notice.Attempt, validity)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return send.Receipt{}, &send.Error{Class: send.Permanent, Err: err}
	}
	req.SetBasicAuth(c.cfg.AccountSID, c.cfg.AuthToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return send.Receipt{}, transportError(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return send.Receipt{}, &send.Error{Class: send.Unknown, Code: resp.StatusCode, Err: fmt.Errorf("twilio: reading the answer: %w", err)}
	}
	return Outcome(resp.StatusCode, raw)
}

// Close does nothing; the Client holds no connection of its own.
func (c *Client) Close() error { return nil }

// transportError classifies a request that got no answer: refused before
// a connection (nothing was sent) is Transient, send.ErrUnreachable;
// anything after (a timeout, a reset) is Unknown.
func transportError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return &send.Error{Class: send.Transient, Err: fmt.Errorf("twilio: %w: %v", send.ErrUnreachable, err)}
	}
	if errors.Is(err, context.Canceled) {
		return &send.Error{Class: send.Unknown, Err: fmt.Errorf("twilio: cancelled in flight: %w", err)}
	}
	return &send.Error{Class: send.Unknown, Err: fmt.Errorf("twilio: no answer: %w", err)}
}

// apiAnswer is the part of a Message resource or an error answer that
// Outcome reads.
type apiAnswer struct {
	SID     string `json:"sid"`
	Status  any    `json:"status"` // a Message's status, or an error's HTTP status (a number)
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Outcome classifies Twilio's answer to a create: 2xx with a sid: sent
// (the sid is the provider id); 2xx without one: Unknown; 429, a 5xx of
// 503 (Twilio overloaded before accepting) or a 4xx whose code Retryable
// lists: Transient; a 4xx with a Permanent code or any other 4xx code:
// Permanent (a pass does not send it again; scan resolve --retry may);
// any other 5xx: Unknown (Twilio may have created the Message).
func Outcome(status int, body []byte) (send.Receipt, error) {
	var a apiAnswer
	_ = json.Unmarshal(body, &a)
	switch {
	case status >= 200 && status < 300 && strings.HasPrefix(a.SID, "SM") || status >= 200 && status < 300 && strings.HasPrefix(a.SID, "MM"):
		return send.Receipt{ProviderID: a.SID}, nil
	case status >= 200 && status < 300:
		return send.Receipt{}, &send.Error{Class: send.Unknown, Code: status, Err: errors.New("twilio: accepted without a Message sid")}
	}
	err := &APIError{Status: status, Code: a.Code, Message: a.Message}
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusServiceUnavailable, Retryable(a.Code):
		return send.Receipt{}, &send.Error{Class: send.Transient, Code: status, Err: err}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return send.Receipt{}, &send.Error{Class: send.Transient, Code: status, Err: fmt.Errorf("%w: %w", send.ErrMisconfigured, err)}
	case status >= 400 && status < 500 && a.Code == Unsubscribed:
		return send.Receipt{}, &send.Error{Class: send.Permanent, Code: status, Err: fmt.Errorf("%w: %w", send.ErrUnsubscribed, err)}
	case status >= 400 && status < 500:
		return send.Receipt{}, &send.Error{Class: send.Permanent, Code: status, Err: err}
	}
	return send.Receipt{}, &send.Error{Class: send.Unknown, Code: status, Err: err}
}

// APIError is Twilio's error answer: its HTTP status, Twilio error code
// and message (https://www.twilio.com/docs/api/errors).
type APIError struct {
	Status  int
	Code    int
	Message string // Twilio's text: it often quotes the number, so Error leaves it out
}

// Error names the status and code, and the code's title from the error
// reference where codes.go has it; never Twilio's message, which quotes
// the recipient's number ("The 'To' number +1... is not valid").
func (e *APIError) Error() string {
	s := fmt.Sprintf("twilio: HTTP %d, error %d", e.Status, e.Code)
	if t, ok := permanent[e.Code]; ok {
		s += ": " + t
	} else if t, ok := retryable[e.Code]; ok {
		s += ": " + t
	}
	return s
}

// Code returns the Twilio error code err carries (an *APIError), 0 if none.
func Code(err error) int {
	var a *APIError
	if errors.As(err, &a) {
		return a.Code
	}
	return 0
}
