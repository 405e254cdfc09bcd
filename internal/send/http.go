package send

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// HTTPConfig configures an HTTP sender.
type HTTPConfig struct {
	// URL is the http or https endpoint that receives one POST per
	// notice.
	URL string
	// Timeout bounds one Send. Default DefaultSendTimeout.
	Timeout time.Duration
	// Pool is the most connections open to the endpoint, kept alive
	// between requests; give it the Dispatcher's Concurrency. Default
	// DefaultConcurrency. Ignored with Client.
	Pool int
	// TLSConfig is the base client TLS configuration, e.g. RootCAs for a
	// test server; nil: the system's roots (which SSL_CERT_FILE and
	// SSL_CERT_DIR replace). Certificates are always verified:
	// InsecureSkipVerify is refused. Ignored with Client.
	TLSConfig *tls.Config
	// Client sends the requests, as given. Default: a client whose
	// transport keeps Pool connections alive (IdleConnTimeout), attempts
	// HTTP/2, and has no timeout of its own.
	Client *http.Client
}

// HTTPRequest is the JSON body of each POST.
type HTTPRequest struct {
	Key            string `json:"key"`
	MessageID      string `json:"message_id"` // with angle brackets
	To             string `json:"to"`
	Subject        string `json:"subject"`
	Text           string `json:"text"`
	HTML           string `json:"html"`
	SubscriptionID string `json:"subscription_id"`
	Kind           string `json:"kind"`
	Attempt        int    `json:"attempt"` // the claim's attempt number (Notice.Attempt, at least 1)
}

// HTTP is a Sender that POSTs each message as JSON (HTTPRequest) to one
// endpoint, with the header "Idempotency-Key: <notice key>" so that the
// provider can drop a repeat.
//
// Outcomes: a 2xx status is accepted; 429 and 503 are Transient; any other
// 4xx is Permanent; 500, 502, 504, other statuses, and any failure after
// the request was written (a timeout, a reset) are Unknown; a failure
// before the request was written (connection refused, DNS, TLS) is
// Transient.
//
// An HTTP is safe for concurrent use.
type HTTP struct {
	url      string
	timeout  time.Duration
	client   *http.Client
	redacted string
}

var _ Sender = (*HTTP)(nil)

// NewHTTP validates cfg and fills its defaults.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	redacted := RedactURL(cfg.URL)
	u, err := url.Parse(cfg.URL)
	if err != nil || cfg.URL == "" || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("send: HTTPConfig.URL %s is not an http(s) URL", redacted)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("send: HTTPConfig.Timeout %v is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultSendTimeout
	}
	if cfg.Pool < 0 {
		return nil, fmt.Errorf("send: HTTPConfig.Pool %d is negative", cfg.Pool)
	}
	if cfg.Pool == 0 {
		cfg.Pool = DefaultConcurrency
	}
	if cfg.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if cfg.TLSConfig != nil {
			if cfg.TLSConfig.InsecureSkipVerify {
				return nil, errors.New("send: HTTPConfig.TLSConfig.InsecureSkipVerify is not allowed")
			}
			tr.TLSClientConfig = cfg.TLSConfig.Clone()
		}
		SizeTransport(tr, cfg.Pool)
		cfg.Client = &http.Client{Transport: tr}
	}
	return &HTTP{url: cfg.URL, timeout: cfg.Timeout, client: cfg.Client, redacted: redacted}, nil
}

// String returns the endpoint without any password.
func (h *HTTP) String() string { return h.redacted }

// Send POSTs m. The Receipt's ProviderID is the response's JSON field "id",
// else its X-Message-Id header, else "".
func (h *HTTP) Send(ctx context.Context, m *Message) (Receipt, error) {
	if err := ctx.Err(); err != nil {
		return Receipt{}, &Error{Class: Transient, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	n := m.Notice
	body, err := json.Marshal(HTTPRequest{
		Key:            n.Key,
		MessageID:      m.MessageID,
		To:             n.To,
		Subject:        m.Subject,
		Text:           m.Text,
		HTML:           m.HTML,
		SubscriptionID: n.SubscriptionID,
		Kind:           n.Kind, Attempt: max(n.Attempt, 1),
	})
	if err != nil {
		return Receipt{}, &Error{Class: Permanent, Err: fmt.Errorf("http: %w", err)}
	}
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return Receipt{}, &Error{Class: Permanent, Err: fmt.Errorf("http: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", n.Key)

	resp, err := h.client.Do(req)
	if err != nil {
		// url.Error carries the URL, which may carry a password.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if wrote.Load() {
			return Receipt{}, &Error{Class: Unknown, Err: fmt.Errorf("http: no response after the request was sent to %s: %w", h.redacted, err)}
		}
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			err = fmt.Errorf("%w: %w", ErrUnreachable, err)
		}
		return Receipt{}, &Error{Class: Transient, Err: fmt.Errorf("http: %s: %w", h.redacted, err)}
	}
	defer resp.Body.Close()
	// The status decides; a body we cannot read or parse changes nothing.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		var out struct {
			ID any `json:"id"`
		}
		id := ""
		if json.Unmarshal(b, &out) == nil && out.ID != nil {
			id = strings.TrimSpace(fmt.Sprint(out.ID))
		}
		if id == "" {
			id = resp.Header.Get("X-Message-Id")
		}
		return Receipt{ProviderID: id}, nil
	}
	var class Class
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		class = Transient
	case code >= 400 && code < 500:
		class = Permanent
	default:
		class = Unknown
	}
	return Receipt{}, &Error{Class: class, Code: code, Err: fmt.Errorf("http: status %d: %s", code, snippet(b, n.To))}
}

// snippet returns the start of a response body on one line, without the
// recipient address.
func snippet(b []byte, to string) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	s = Scrub(s, to)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "")
	}
	return s
}

// Close closes the client's idle connections; it returns nil.
func (h *HTTP) Close() error {
	h.client.CloseIdleConnections()
	return nil
}
