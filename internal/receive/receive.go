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
//	POST /events/<name>    each provider's webhook (Config.Endpoints)
//	GET  /healthz          the process serves
//	GET  /readyz           the database answers, and the server is not draining
//	GET  /metrics          Prometheus (scan_receive_requests_total{provider,result})
//
// Each provider is an Endpoint (endpoint.go): a name (also the reconcile
// format of its bodies), a body limit and a verifier, all made by the
// provider's package (internal/provider/<name>); the server knows no
// provider by name. A new provider is one more endpoint, listed by the
// registry (internal/provider/registry).
//
// Nothing unverified is written anywhere: a request without credentials
// is answered 401, a request whose credentials are wrong (or whose
// endpoint has no secret configured) 403, unless the provider's verifier
// answers otherwise (Postmark's wrong credentials are 401: Postmark stops
// retrying at a 403). Logs and metric labels carry the
// provider, the result and the reason, never an address or a secret.
//
// A Server is safe for concurrent use; its handler serves at most
// Config.MaxInFlight requests at once.
package receive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/metrics"
	"scan/internal/usage"
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
	// MaxFutureSkew is how far ahead of our clock a signature's
	// timestamp may be.
	MaxFutureSkew = 5 * time.Minute
)

// Config configures a Server. DB is required; Endpoints are the
// providers' webhooks (each provider's package makes its own, the
// registry all of them: registry.Endpoints), and one whose Verify is nil
// accepts nothing (403).
type Config struct {
	DB  *sqlx.DB
	Log zerolog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// By is recorded as the author of each change; "" is "receive".
	By string
	// Endpoints are served at /events/<Name>, in their order.
	Endpoints []Endpoint

	// MaxInFlight caps the requests served at once; 0 is
	// DefaultMaxInFlight. BusyWait is how long one waits for a slot; 0 is
	// DefaultBusyWait.
	MaxInFlight int
	BusyWait    time.Duration
	// Metrics counts the requests; nil makes a new one.
	Metrics *metrics.Receive
}

// ConfigError is a Config that cannot be served; Field names the setting.
type ConfigError = usage.Error

// Server is the receiver. Make it with New.
type Server struct {
	cfg      Config
	log      zerolog.Logger
	now      func() time.Time
	metrics  *metrics.Receive
	sem      chan struct{}
	draining atomic.Bool
}

// New validates cfg, fills its defaults and returns the server. It does
// no I/O: the database is first used by a request (or /readyz).
func New(cfg Config) (*Server, error) {
	if cfg.DB == nil {
		return nil, &ConfigError{Field: "DB", Msg: "required"}
	}
	s := &Server{cfg: cfg, log: cfg.Log.With().Str("component", "receive").Logger(), now: cfg.Now, metrics: cfg.Metrics}
	if s.now == nil {
		s.now = time.Now
	}
	if s.cfg.By == "" {
		s.cfg.By = "receive"
	}
	if s.metrics == nil {
		names := make([]string, len(cfg.Endpoints))
		for i, ep := range cfg.Endpoints {
			names[i] = ep.Name
		}
		s.metrics = metrics.NewReceive(names)
	}
	if s.cfg.MaxInFlight <= 0 {
		s.cfg.MaxInFlight = DefaultMaxInFlight
	}
	if s.cfg.BusyWait <= 0 {
		s.cfg.BusyWait = DefaultBusyWait
	}
	s.sem = make(chan struct{}, s.cfg.MaxInFlight)
	for _, ep := range cfg.Endpoints {
		if ep.Name == "" || ep.Limit <= 0 {
			return nil, &ConfigError{Field: "Endpoints", Msg: fmt.Sprintf("endpoint %q without a name or a body limit", ep.Name)}
		}
	}
	return s, nil
}

// Configured returns the providers whose endpoint accepts requests.
func (s *Server) Configured() []string {
	var names []string
	for _, ep := range s.cfg.Endpoints {
		if ep.Verify != nil {
			names = append(names, ep.Name)
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
	for _, ep := range s.cfg.Endpoints {
		mux.Handle("POST /events/"+ep.Name, s.serveEvents(ep))
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
func (s *Server) answer(w http.ResponseWriter, ep Endpoint, status int, result string, body map[string]any) {
	s.metrics.Request(ep.Name, result)
	if body == nil {
		body = map[string]any{}
	}
	body["result"] = result
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized && ep.Challenge != "" {
		w.Header().Set("WWW-Authenticate", ep.Challenge)
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "30")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// Refusal is a request answered without being applied: Status, the
// Result it is counted as, and the Reason logged and answered. A
// verifier returns one (Unverified, Refused, Malformed, or its own);
// any other error is the server's (503, the provider retries).
type Refusal struct {
	Status int
	Result string
	Reason string
}

func (e *Refusal) Error() string { return e.Reason }

// Unverified is a request without credentials: 401.
func Unverified(format string, a ...any) error {
	return &Refusal{http.StatusUnauthorized, "unverified", fmt.Sprintf(format, a...)}
}

// Refused is a request whose credentials are wrong: 403.
func Refused(format string, a ...any) error {
	return &Refusal{http.StatusForbidden, "refused", fmt.Sprintf(format, a...)}
}

// Malformed is a verified request whose content cannot be applied: 400.
func Malformed(format string, a ...any) error {
	return &Refusal{http.StatusBadRequest, "malformed", fmt.Sprintf(format, a...)}
}

// asRefusal returns err as a Refusal, or nil when it is something else (a
// database error).
func asRefusal(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}

// Listening is how `scan receive` serves: on Addr (host:port; AddrField
// names the flag or variable it came from), with Grace for the requests
// in flight on SIGTERM and MaxInFlight requests at once.
type Listening struct {
	Addr, AddrField string
	Grace           time.Duration
	MaxInFlight     int
}

// Validate checks l without I/O: a *ConfigError names what to fix.
func (l Listening) Validate() error {
	if _, _, err := net.SplitHostPort(l.Addr); err != nil {
		return &ConfigError{Field: l.AddrField, Msg: fmt.Sprintf("%q is not host:port (e.g. :8080)", l.Addr)}
	}
	if l.Grace <= 0 {
		return &ConfigError{Field: "--grace", Msg: "must be positive"}
	}
	if l.MaxInFlight <= 0 {
		return &ConfigError{Field: "--max-in-flight", Msg: "must be positive"}
	}
	return nil
}
