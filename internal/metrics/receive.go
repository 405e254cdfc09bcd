package metrics

import (
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// The label values of scan_receive_requests_total's result. Every
// combination with the providers NewReceive is given is created at zero,
// so that a ratio over them (the rejection-rate alert) never lacks a
// series.
var (
	// ReceiveResults are what a request came to:
	//   - ok: verified, applied and committed (2xx);
	//   - duplicate: verified, and every event in it was already kept, or a
	//     Mailgun retry of a request already committed (2xx);
	//   - subscribed, unsubscribed: an SNS subscription confirmed, an
	//     UnsubscribeConfirmation logged (2xx);
	//   - unverified: no credentials or signature (401);
	//   - refused: a wrong signature or credentials, a foreign topic or
	//     certificate host, a stale or reused token, or an endpoint whose
	//     secret is not configured (403; Postmark's wrong credentials 401,
	//     since Postmark stops retrying at a 403);
	//   - malformed: verified but not readable (400);
	//   - too_large: a body over the endpoint's limit (413);
	//   - busy: no worker free in time (503);
	//   - unavailable: the database or a confirmation failed (5xx).
	ReceiveResults = []string{"ok", "duplicate", "subscribed", "unsubscribed", "unverified", "refused", "malformed", "too_large", "busy", "unavailable"}
)

// Receive holds the metrics of `scan receive`, a long-running server that
// Prometheus scrapes (a server is not a batch job: nothing is pushed). It
// is safe for concurrent use.
type Receive struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
}

// NewReceive returns the receiver's metrics, the label set of each of
// providers (the provider label's values, the receiver's endpoints: the
// caller's vocabulary, as Config.Results is the pass's) and each result at
// zero, with the Go and process collectors beside them (memory and file
// descriptors of the pod).
func NewReceive(providers []string) *Receive {
	reg := prometheus.NewRegistry()
	m := &Receive{reg: reg, requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scan_receive_requests_total",
		Help: "Webhook requests scan receive answered, by provider and result (ok, duplicate, subscribed, unsubscribed, unverified, refused, malformed, too_large, busy, unavailable).",
	}, []string{"provider", "result"})}
	reg.MustRegister(m.requests, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, p := range providers {
		for _, r := range ReceiveResults {
			m.requests.WithLabelValues(p, r)
		}
	}
	return m
}

// Request counts one answered request. A result outside ReceiveResults
// is a bug; it is counted under result "unavailable" of the provider so
// that it is seen rather than lost. A provider NewReceive was not given
// gets its series when first counted.
func (m *Receive) Request(provider, result string) {
	if !slices.Contains(ReceiveResults, result) {
		result = "unavailable"
	}
	m.requests.WithLabelValues(provider, result).Inc()
}

// Value returns the count of one label set, for tests and benchmarks.
func (m *Receive) Value(provider, result string) float64 {
	c, err := m.requests.GetMetricWithLabelValues(provider, result)
	if err != nil {
		return 0
	}
	return counterValue(c)
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *Receive) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Gatherer returns the registry, for tests.
func (m *Receive) Gatherer() prometheus.Gatherer { return m.reg }

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
