package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of ClientConfig.
const (
	DefaultTimeout       = 30 * time.Second // one request
	DefaultRate          = 5                // requests per second
	DefaultRetries       = 4                // retries of a 429 or 5xx answer, after the first try
	DefaultBackoff       = time.Second      // the first retry's wait without Retry-After; doubled per retry
	DefaultMaxRetryAfter = 2 * time.Minute  // the longest Retry-After honoured
	maxAnswer            = 16 << 20         // the largest answer read
)

// ClientConfig bounds and paces a Provider's requests. The zero value is
// the defaults above; every field's zero value means its default.
type ClientConfig struct {
	// BaseURL is the API's base URL (POSTMARK_API_URL, MAILGUN_API_URL,
	// SENDGRID_API_URL); "" is the provider's public API.
	BaseURL string
	// HTTP is the client requests go through; nil is a client of its own.
	HTTP *http.Client
	// Timeout bounds one request, its answer read whole.
	Timeout time.Duration
	// Rate is the most requests per second, one at a time (burst 1).
	Rate rate.Limit
	// Retries is how many times a 429 or 5xx answer (or a request that
	// failed on the network) is tried again; a negative value is none.
	Retries int
	// Backoff is the wait before the first retry when the answer names no
	// Retry-After; it doubles per retry.
	Backoff time.Duration
	// MaxRetryAfter is the longest Retry-After waited for; a longer one
	// ends the request with its error.
	MaxRetryAfter time.Duration
}

// StatusError is an answer other than 2xx, after any retries. It never
// holds the answer's body (which may name an address).
type StatusError struct {
	Provider string
	Method   string
	Path     string // without the query
	Status   int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s API: %s %s: HTTP %d", e.Provider, e.Method, e.Path, e.Status)
}

// Client is one provider's HTTP client for its pull API: paced (one
// request at a time, ClientConfig.Rate), bounded (a timeout per request)
// and retrying 429 and 5xx answers with backoff. A provider's asker
// (internal/provider/<name>) makes one with NewClient.
type Client struct {
	name    string
	base    *url.URL
	hc      *http.Client
	lim     *rate.Limiter
	cfg     ClientConfig
	auth    func(*http.Request)
	sleepFn func(ctx context.Context, d time.Duration) error
	now     func() time.Time // for a Retry-After given as a date
}

// errNot2xx marks an answer other than 2xx (once turns it into a
// *StatusError).
var errNot2xx = errors.New("not 2xx")

// NewClient returns provider name's client of the API at cfg.BaseURL
// (defaultBase when empty); auth sets each request's credentials.
func NewClient(name, defaultBase string, cfg ClientConfig, auth func(*http.Request)) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = defaultBase
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("ask: %s base URL %q is not an http(s) URL", name, cfg.BaseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{name: name, base: u, hc: hc, lim: rate.NewLimiter(cfg.Rate, 1), cfg: cfg, auth: auth, sleepFn: sleep, now: time.Now}, nil
}

// Do sends one request (body, when not nil, as JSON) and decodes a 2xx
// answer into out (when not nil). It returns the status: a 404 is
// returned with a *StatusError, so callers can tell "no such message".
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) (int, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return 0, fmt.Errorf("%s API: %w", c.name, err)
		}
	}
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	for try := 0; ; try++ {
		if err := c.lim.Wait(ctx); err != nil {
			return 0, err
		}
		status, wait, err := c.once(ctx, method, u.String(), payload, out)
		retryable := errors.Is(err, errNot2xx) && (status == http.StatusTooManyRequests || status >= 500) ||
			status == 0 && err != nil && ctx.Err() == nil
		if !retryable || try >= c.cfg.Retries {
			if errors.Is(err, errNot2xx) {
				err = &StatusError{Provider: c.name, Method: method, Path: path, Status: status}
			}
			return status, err
		}
		if wait < 0 {
			wait = c.cfg.Backoff << try
		}
		if wait > c.cfg.MaxRetryAfter {
			return status, fmt.Errorf("%w (Retry-After %v is longer than %v: try again later)", &StatusError{Provider: c.name, Method: method, Path: path, Status: status}, wait, c.cfg.MaxRetryAfter)
		}
		if err := c.sleepFn(ctx, wait); err != nil {
			return status, err
		}
	}
}

// once sends one request; wait is the answer's Retry-After (-1 when it
// names none). err is set for any answer but 2xx.
func (c *Client) once(ctx context.Context, method, u string, payload []byte, out any) (status int, wait time.Duration, err error) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(rctx, method, u, rd)
	if err != nil {
		return 0, -1, err
	}
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.auth(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, -1, fmt.Errorf("%s API: %s: %w", c.name, method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, -1, fmt.Errorf("%s API: read the answer: %w", c.name, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After"), c.now()), errNot2xx
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, -1, fmt.Errorf("%s API: the answer is not the JSON the API documents: %w", c.name, err)
		}
	}
	return resp.StatusCode, -1, nil
}

// retryAfter reads a Retry-After header (delay-seconds or an HTTP date,
// RFC 9110 section 10.2.3); -1 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return -1
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Now is the client's clock (a Retry-After given as a date is read by it).
func (c *Client) Now() time.Time { return c.now() }

// Base is the API's base URL (a copy): a paging URL the API answers is
// followed only on it, so that credentials never go to another host.
func (c *Client) Base() url.URL { return *c.base }
