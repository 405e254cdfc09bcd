// Package receive owns `scan receive`, the one server of the project: it
// takes the providers' event webhooks, verifies each request as its
// provider documents, applies the events in it exactly as `scan
// reconcile --format F` applies a file of them (reconcile.ApplyTx: same
// precedence, attempts, evidence and digest), in one transaction per
// request, and answers 2xx only once that transaction has committed. It
// holds no queue: what it has not committed it has not acknowledged, so
// the provider retries it (every one of them retries on 5xx and on a lost
// connection), and a SIGKILL at any moment loses nothing a provider was
// told was received.
//
// Routes (Handler):
//
//	POST /events/ses       an SNS HTTP/HTTPS subscription (SES event publishing)
//	POST /events/sendgrid  the signed Event Webhook
//	POST /events/mailgun   webhooks, signed with the webhook signing key
//	POST /events/postmark  webhooks, with basic auth in the URL
//	GET  /healthz          the process serves
//	GET  /readyz           the database answers, and the server is not draining
//	GET  /metrics          Prometheus (scan_receive_requests_total{provider,result})
//
// Each provider is an endpoint (endpoint.go): a name, the reconcile format
// of its bodies, a body limit and a verifier. Another provider (Twilio's
// status callbacks) is one more endpoint in endpoints().
//
// Nothing unverified is written anywhere: a request without credentials
// is answered 401, a request whose credentials are wrong (or whose
// endpoint has no secret configured) 403 (Postmark's wrong credentials
// 401: Postmark stops retrying at a 403). SNS counts any 4xx as delivered
// and does not retry it. Logs and metric labels carry the
// provider, the result and the reason, never an address or a secret.
//
// A Server is safe for concurrent use; its handler serves at most
// Config.MaxInFlight requests at once.
package receive

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/metrics"
	"scan/internal/provider"
)

// Defaults of Config, and the limits of the server.
const (
	// DefaultMaxInFlight is how many requests are served at once when
	// Config.MaxInFlight is 0: the database pool's size (cmd/scan opens 8
	// connections), since each request holds one transaction.
	DefaultMaxInFlight = 8
	// DefaultBusyWait is how long a request waits for a free worker
	// before it is answered 503 (the provider retries it).
	DefaultBusyWait = 5 * time.Second
	// DefaultMailgunMaxAge is the oldest Mailgun signature taken. Mailgun
	// retries a webhook that was not answered 200 (or 406) for 8 hours
	// (https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/webhook-retries:
	// after 5 min, 10 min, 15 min, 1 h, 2 h and 4 h, about 7.5 h in all);
	// the retry may carry the signature of the first attempt, so the limit
	// is that window plus an hour of margin. An older signature is
	// refused: its token may have been pruned (webhook_token keeps tokens
	// this long), so a replay could no longer be told.
	DefaultMailgunMaxAge = 9 * time.Hour
	// maxFutureSkew is how far ahead of our clock a signature's
	// timestamp may be.
	maxFutureSkew = 5 * time.Minute
)

// Config configures a Server. DB is required; every provider's secret is
// optional, and an endpoint whose secret is empty accepts nothing (403).
type Config struct {
	DB  *sqlx.DB
	Log zerolog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// By is recorded as the author of each change; "" is "receive".
	By string

	// SendGridPublicKey is the Event Webhook's verification key as
	// SendGrid shows it: base64 of the DER (PKIX) ECDSA P-256 public key.
	SendGridPublicKey string
	// MailgunSigningKey is the webhook signing key.
	MailgunSigningKey string
	// MailgunMaxAge is the oldest signature taken; 0 is
	// DefaultMailgunMaxAge.
	MailgunMaxAge time.Duration
	// PostmarkUser and PostmarkPassword are the basic-auth credentials
	// put in the webhook's URL; both are required for the endpoint.
	PostmarkUser, PostmarkPassword string
	// SNSTopics are the topic ARNs whose messages are taken and whose
	// subscriptions are confirmed; empty: /events/ses accepts nothing.
	SNSTopics []string
	// SNSCertHosts are the hosts a SigningCertURL or SubscribeURL may
	// name; empty is sns.<region>.amazonaws.com and .com.cn for the
	// region of each topic. https only, except for a loopback host.
	SNSCertHosts []string
	// TwilioAuthToken verifies /events/twilio (X-Twilio-Signature), and
	// TwilioCallbackURL is the public URL Twilio posts it to (the
	// StatusCallback the pass names, SCAN_TWILIO_STATUS_CALLBACK): the URL
	// Twilio signs. Both are required for the endpoint.
	TwilioAuthToken, TwilioCallbackURL string
	// HTTPClient fetches signing certificates and visits SubscribeURLs;
	// nil is a client with a 10s timeout that follows no redirect.
	HTTPClient *http.Client

	// MaxInFlight caps the requests served at once; 0 is
	// DefaultMaxInFlight. BusyWait is how long one waits for a slot; 0 is
	// DefaultBusyWait.
	MaxInFlight int
	BusyWait    time.Duration
	// Metrics counts the requests; nil makes a new one.
	Metrics *metrics.Receive
}

// ConfigError is a Config that cannot be served; Field names the setting.
type ConfigError struct {
	Field, Msg string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Msg }

// Server is the receiver. Make it with New.
type Server struct {
	cfg       Config
	log       zerolog.Logger
	now       func() time.Time
	metrics   *metrics.Receive
	sem       chan struct{}
	draining  atomic.Bool
	sendgrid  *ecdsa.PublicKey
	sns       *snsVerifier
	endpoints []endpoint
}

// Validate checks everything in cfg but DB, without I/O, and returns the
// providers whose endpoint it configures (a *ConfigError names the
// setting that is wrong). cmd/scan calls it before connecting.
func (cfg Config) Validate() ([]string, error) {
	probe := cfg
	probe.DB = &sqlx.DB{}
	s, err := New(probe)
	if err != nil {
		return nil, err
	}
	return s.Configured(), nil
}

// New validates cfg, fills its defaults and returns the server. It does
// no I/O: the database is first used by a request (or /readyz).
func New(cfg Config) (*Server, error) {
	if cfg.DB == nil {
		return nil, &ConfigError{"DB", "required"}
	}
	s := &Server{cfg: cfg, log: cfg.Log.With().Str("component", "receive").Logger(), now: cfg.Now, metrics: cfg.Metrics}
	if s.now == nil {
		s.now = time.Now
	}
	if s.cfg.By == "" {
		s.cfg.By = "receive"
	}
	if s.metrics == nil {
		s.metrics = metrics.NewReceive(provider.Strings(provider.Email...))
	}
	if s.cfg.MaxInFlight <= 0 {
		s.cfg.MaxInFlight = DefaultMaxInFlight
	}
	if s.cfg.BusyWait <= 0 {
		s.cfg.BusyWait = DefaultBusyWait
	}
	if s.cfg.MailgunMaxAge <= 0 {
		s.cfg.MailgunMaxAge = DefaultMailgunMaxAge
	}
	s.sem = make(chan struct{}, s.cfg.MaxInFlight)
	if cfg.SendGridPublicKey != "" {
		k, err := parseSendGridKey(cfg.SendGridPublicKey)
		if err != nil {
			return nil, &ConfigError{"SENDGRID_WEBHOOK_PUBLIC_KEY", err.Error()}
		}
		s.sendgrid = k
	}
	if (cfg.PostmarkUser == "") != (cfg.PostmarkPassword == "") {
		return nil, &ConfigError{"POSTMARK_WEBHOOK_USER, POSTMARK_WEBHOOK_PASSWORD", "set both or neither"}
	}
	if cfg.TwilioCallbackURL != "" {
		if u, err := url.Parse(cfg.TwilioCallbackURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, &ConfigError{"SCAN_TWILIO_STATUS_CALLBACK", "not an absolute http(s) URL: the public URL of /events/twilio"}
		}
	}
	if len(cfg.SNSTopics) > 0 {
		v, err := newSNSVerifier(cfg.SNSTopics, cfg.SNSCertHosts, cfg.HTTPClient)
		if err != nil {
			return nil, err
		}
		s.sns = v
	}
	s.endpoints = s.makeEndpoints()
	return s, nil
}

// Configured returns the providers whose endpoint accepts requests.
func (s *Server) Configured() []string {
	var names []string
	for _, ep := range s.endpoints {
		if ep.verify != nil {
			names = append(names, ep.name)
		}
	}
	return names
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *metrics.Receive { return s.metrics }

// Drain makes /readyz answer 503 from now on, so that a load balancer
// stops sending new requests while in-flight ones finish (http.Server's
// Shutdown waits for those).
func (s *Server) Drain() { s.draining.Store(true) }

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, ep := range s.endpoints {
		mux.Handle("POST /events/"+ep.name, s.serveEvents(ep))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", s.serveReady)
	mux.Handle("GET /metrics", s.metrics.Handler())
	return mux
}

// serveReady answers 200 when the ledger answers within 2 seconds and the
// server is not draining.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	if s.draining.Load() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := ledger.Probe(ctx, s.cfg.DB); err != nil {
		s.log.Warn().Err(err).Msg("readyz: the ledger does not answer")
		http.Error(w, "database unavailable", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// answer writes one JSON answer and counts it.
func (s *Server) answer(w http.ResponseWriter, name string, status int, result string, body map[string]any) {
	s.metrics.Request(name, result)
	if body == nil {
		body = map[string]any{}
	}
	body["result"] = result
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized && name == string(provider.Postmark) {
		w.Header().Set("WWW-Authenticate", `Basic realm="scan receive"`)
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "30")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// refusal is a request answered without being applied: status, the
// result it is counted as, and the reason logged and answered.
type refusal struct {
	status int
	result string
	reason string
}

func (e *refusal) Error() string { return e.reason }

func unverified(format string, a ...any) error {
	return &refusal{http.StatusUnauthorized, "unverified", fmt.Sprintf(format, a...)}
}

func refused(format string, a ...any) error {
	return &refusal{http.StatusForbidden, "refused", fmt.Sprintf(format, a...)}
}

func malformed(format string, a ...any) error {
	return &refusal{http.StatusBadRequest, "malformed", fmt.Sprintf(format, a...)}
}

// asRefusal returns err as a refusal, or nil when it is something else (a
// database error).
func asRefusal(err error) *refusal {
	var r *refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}
