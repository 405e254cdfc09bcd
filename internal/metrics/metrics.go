// Package metrics owns the Prometheus metrics of one pass and pushes them
// to a Pushgateway when the pass ends: a batch job has exited before any
// Prometheus server could scrape it.
//
// The Pushgateway keeps one group per job ("scan") and shard and replaces
// the whole group on each push, so the counts are gauges of the last pass
// ("how many did the last pass send"), not counters; rate() over them means
// nothing, and alerts compare them with thresholds instead. A completed pass
// replaces the group (PUT); an aborted one only adds or replaces the
// metrics it pushes (POST) and never pushes scan_last_success_timestamp_seconds,
// so the previous success time survives a failed pass and "last success too
// old" stays true until a pass completes.
//
// No label carries an email address, a subscription id or a notice key:
// the labels are result, outcome, and domain, whose values are only the
// recipient domains named in the policy's rate.domains, else "other".
//
// A Pass is safe for concurrent use: the scan's hooks call ObserveOutcome
// from its recorder goroutine.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
)

// Job is the Pushgateway job name of every push.
const Job = "scan"

// OtherDomain is the domain label of every recipient domain that the
// policy does not name in rate.domains: the label's values stay bounded.
const OtherDomain = "other"

// Counts are a pass's tallies, as its summary reports them.
type Counts struct {
	// Notices are the per-notice tallies by result (the values of
	// Config.Results); a result it lacks is pushed as 0.
	Notices map[string]int
	// Backlog splits the deferred notices by recipient domain.
	Backlog map[string]int
	// Quarantine is the number of claims with no recorded outcome, from
	// this pass and earlier ones; QuarantineOldest the oldest claim's
	// time, zero when there is none.
	Quarantine       int
	QuarantineOldest time.Time
	// InvalidAddress is the number of notices waiting in retry with
	// reason invalid_address, their window open (any run).
	InvalidAddress int
	// KeyMismatch is set when NOTICE_KEY_SECRET no longer derives the
	// keys in the ledger (a rotated or wrong secret).
	KeyMismatch bool
	// RetryOldest is when the oldest row in state retry was first
	// claimed, zero when none is; WindowLength the policy's longest
	// window, what a retry should never outlive.
	RetryOldest  time.Time
	WindowLength time.Duration
	// Attempts is the sum of the attempt numbers of the pass's claims and
	// Keys the number of those claims (one per notice key).
	Attempts, Keys int
	// Objective is the delivery objective per trailing period, counted
	// from the ledger at the pass's end; nil when it could not be counted.
	// EmailConfirms says whether the email sender reports delivery.
	Objective     []ObjectiveCount
	EmailConfirms bool
}

// Config configures a Pass.
type Config struct {
	// Results are the values of the result label of scan_pass_notices, in
	// the order of the pass's summary (scan.ResultNames): each is pushed,
	// zeros included, and its help text lists them.
	Results []string
	// Shard and Shards name the pass's shard; Shards defaults to 1. The
	// push is grouped by job and shard ("0" for an unsharded pass).
	Shard, Shards int
	// Domains are the recipient domains that get their own domain label
	// value (the policy's rate.domains); every other domain is "other".
	Domains []string
	// Client sends the push; default an http.Client with a 10s timeout.
	Client *http.Client
}

// Pass holds the metrics of one pass in a registry of its own.
type Pass struct {
	cfg      Config
	domains  map[string]bool
	reg      *prometheus.Registry
	notices  *prometheus.GaugeVec
	quar     prometheus.Gauge
	quarOld  prometheus.Gauge
	invalid  prometheus.Gauge
	latency  *prometheus.HistogramVec
	toSend   *prometheus.HistogramVec
	waited   *prometheus.HistogramVec
	backlog  *prometheus.GaugeVec
	duration prometheus.Gauge
	success  prometheus.Gauge
	lastOK   prometheus.Gauge
	shards   prometheus.Gauge
	keyMis   prometheus.Gauge
	retryAge prometheus.Gauge
	window   prometheus.Gauge
	perKey   prometheus.Gauge
	slo      objective
}

// New returns the metrics of a pass, all zero.
func New(cfg Config) *Pass {
	if cfg.Shards < 1 {
		cfg.Shards = 1
	}
	if cfg.Client == nil {
		cfg.Client = newClient()
	}
	p := &Pass{cfg: cfg, domains: map[string]bool{}, reg: prometheus.NewRegistry()}
	for _, d := range cfg.Domains {
		p.domains[strings.ToLower(d)] = true
	}
	p.notices = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scan_pass_notices",
		Help: "Notices of the last pass by result, as in its JSON summary (" + strings.Join(cfg.Results, ", ") + ").",
	}, []string{"result"})
	p.quar = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_quarantine_claims",
		Help: "Claims with no recorded outcome (any run) at the end of the last pass: each needs `scan reconcile` or `scan resolve`.",
	})
	p.quarOld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_quarantine_oldest_claim_timestamp_seconds",
		Help: "Unix time of the oldest claim in quarantine; 0 when the quarantine is empty.",
	})
	p.invalid = invalidGauge()
	p.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scan_claim_to_commit_seconds",
		Help:    "Time from a notice's claim commit to the commit of its outcome, by outcome (sent, retry, failed, claimed = ambiguous). Includes rate-limit waits.",
		Buckets: prometheus.ExponentialBucketsRange(0.01, 3600, 20),
	}, []string{"outcome"})
	p.toSend = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scan_claim_to_send_seconds",
		Help:    "Time from a notice's claim commit until it was first handed to the sender, by recipient domain (policy rate.domains, else other): how far claims run ahead of sends, and so what a crash could strand.",
		Buckets: prometheus.ExponentialBucketsRange(0.001, 3600, 20),
	}, []string{"domain"})
	p.backlog = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scan_domain_backlog_notices",
		Help: "Due notices the last pass left unclaimed (deferred) when its time budget ended, by recipient domain (policy rate.domains, else other).",
	}, []string{"domain"})
	p.waited = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scan_rate_limit_wait_seconds",
		Help:    "Time a notice waited for its domain's and the global token bucket and a free worker, by recipient domain (policy rate.domains, else other).",
		Buckets: prometheus.ExponentialBucketsRange(0.001, 3600, 20),
	}, []string{"domain"})
	p.duration = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_pass_duration_seconds",
		Help: "Wall-clock duration of the last pass.",
	})
	p.success = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_pass_success",
		Help: "1 when the last pass completed, 0 when it aborted (database lost, sender unusable, shutdown, refused by --max-mint).",
	})
	p.lastOK = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_last_success_timestamp_seconds",
		Help: "Unix time at which the last completed pass ended. Only a completed pass pushes it.",
	})
	p.shards = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_shards",
		Help: "Number of shards the pass was one of.",
	})
	p.keyMis = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_key_mismatch",
		Help: "1 when the last pass found that NOTICE_KEY_SECRET no longer derives the keys in the ledger (a rotated or wrong secret), else 0.",
	})
	p.newRetryGauges()
	p.slo = newObjective()
	p.shards.Set(float64(cfg.Shards))
	p.reg.MustRegister(p.notices, p.quar, p.quarOld, p.invalid, p.latency, p.toSend, p.waited, p.backlog, p.duration, p.success, p.lastOK, p.shards, p.keyMis,
		p.retryAge, p.window, p.perKey)
	p.reg.MustRegister(p.slo.collectors()...)
	for _, r := range cfg.Results {
		p.notices.WithLabelValues(r)
	}
	for d := range p.domains {
		p.backlog.WithLabelValues(d)
	}
	p.backlog.WithLabelValues(OtherDomain)
	return p
}

// newRetryGauges makes the gauges of issue 27: the oldest retry's age,
// the window it should not outlive, and the attempts per key.
func (p *Pass) newRetryGauges() {
	p.retryAge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_retry_oldest_age_seconds",
		Help: "Age at the end of the last pass of the oldest ledger row in state retry, since its first claim; 0 when none is in retry.",
	})
	p.window = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_window_length_seconds",
		Help: "The policy's longest notice window, from opening to close: a retry row older than this outlived every window.",
	})
	p.perKey = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_attempts_per_key",
		Help: "Attempts per unique notice key among the last pass's claims (the mean attempt number: 1 when every claim was a first attempt); 0 when it claimed nothing.",
	})
}

// Domain returns the domain label value for a recipient domain: the
// domain itself when the policy names it, else "other".
func (p *Pass) Domain(domain string) string {
	d := strings.ToLower(domain)
	if p.domains[d] {
		return d
	}
	return OtherDomain
}

// ObserveOutcome records one committed outcome: its state (sent, retry,
// failed, or claimed for an ambiguous one), the recipient's domain, the
// claim-to-commit latency, the claim-to-send latency (negative: never
// handed to the sender, not observed) and the time it waited on rate
// limits. It has the signature of scan.Hooks.Outcome's arguments.
func (p *Pass) ObserveOutcome(state, domain string, claimToCommit, claimToSend, waited time.Duration) {
	d := p.Domain(domain)
	p.latency.WithLabelValues(state).Observe(claimToCommit.Seconds())
	if claimToSend >= 0 {
		p.toSend.WithLabelValues(d).Observe(claimToSend.Seconds())
	}
	p.waited.WithLabelValues(d).Observe(waited.Seconds())
}

// Finish sets the pass's totals, its duration and, when completed, the
// last success time (at end).
func (p *Pass) Finish(c Counts, duration time.Duration, completed bool, end time.Time) {
	for _, r := range p.cfg.Results {
		p.notices.WithLabelValues(r).Set(float64(c.Notices[r]))
	}
	backlog := map[string]int{}
	for d, n := range c.Backlog {
		backlog[p.Domain(d)] += n
	}
	for d := range p.domains {
		p.backlog.WithLabelValues(d).Set(float64(backlog[d]))
	}
	p.backlog.WithLabelValues(OtherDomain).Set(float64(backlog[OtherDomain]))
	p.quar.Set(float64(c.Quarantine))
	p.invalid.Set(float64(c.InvalidAddress))
	if c.QuarantineOldest.IsZero() {
		p.quarOld.Set(0)
	} else {
		p.quarOld.Set(float64(c.QuarantineOldest.Unix()))
	}
	p.duration.Set(duration.Seconds())
	p.retryAge.Set(0)
	if !c.RetryOldest.IsZero() {
		p.retryAge.Set(max(0, end.Sub(c.RetryOldest).Seconds()))
	}
	p.window.Set(c.WindowLength.Seconds())
	p.perKey.Set(0)
	if c.Keys > 0 {
		p.perKey.Set(float64(c.Attempts) / float64(c.Keys))
	}
	p.slo.set(c.Objective, c.EmailConfirms)
	if c.KeyMismatch {
		p.keyMis.Set(1)
	} else {
		p.keyMis.Set(0)
	}
	if completed {
		p.success.Set(1)
		p.lastOK.Set(float64(end.Unix()))
	} else {
		p.success.Set(0)
	}
}

// Gatherer returns the pass's registry, for tests and for pushes.
func (p *Pass) Gatherer() prometheus.Gatherer { return p.reg }

// Push sends the metrics to the Pushgateway at gatewayURL, grouped by
// job "scan" and shard. A completed pass replaces its group; an aborted one
// (completed false) adds to it without scan_last_success_timestamp_seconds,
// so the last success time of an earlier pass is kept. The error never
// contains the URL's password.
func (p *Pass) Push(ctx context.Context, gatewayURL string, completed bool) error {
	u, err := pushURL(gatewayURL)
	if err != nil {
		return err
	}
	var g prometheus.Gatherer = p.reg
	if !completed {
		g = without{p.reg, "scan_last_success_timestamp_seconds"}
	}
	pusher := push.New(gatewayURL, Job).
		Grouping("shard", strconv.Itoa(p.cfg.Shard)).
		Gatherer(g).
		Client(p.cfg.Client)
	if completed {
		err = pusher.PushContext(ctx)
	} else {
		err = pusher.AddContext(ctx)
	}
	return pushError(u, err)
}

// pushError returns err, a failed push to u, without u's password; nil
// for nil.
func pushError(u *url.URL, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if pw, ok := u.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(strings.ReplaceAll(msg, url.UserPassword("", pw).String()[1:], "xxxxx"), pw, "xxxxx")
	}
	return fmt.Errorf("push metrics to %s: %s", u.Redacted(), msg)
}

// without gathers every metric family of g except the one named name.
type without struct {
	g    prometheus.Gatherer
	name string
}

func (w without) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := w.g.Gather()
	out := mfs[:0]
	for _, mf := range mfs {
		if mf.GetName() != w.name {
			out = append(out, mf)
		}
	}
	return out, err
}

// pushURL parses a Pushgateway URL (PUSHGATEWAY_URL): http or https with a
// host, or an error that names the variable and never holds the URL.
func pushURL(gatewayURL string) (*url.URL, error) {
	u, err := url.Parse(gatewayURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("PUSHGATEWAY_URL: not an http(s) URL")
	}
	return u, nil
}

// pushTarget is pushURL and the client to push with: client, or a
// 10s-timeout client when it is nil.
func pushTarget(gatewayURL string, client *http.Client) (*url.URL, *http.Client, error) {
	u, err := pushURL(gatewayURL)
	if err != nil {
		return nil, nil, err
	}
	if client == nil {
		client = newClient()
	}
	return u, client, nil
}

// newClient is the pushes' default client: a 10 s timeout and a transport
// of its own. On http.DefaultTransport a push shares its connections with
// whatever else the process runs, and anyone's CloseIdleConnections there
// (httptest.Server.Close calls it) can break a push in flight.
func newClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// invalidGauge is scan_invalid_address_notices.
func invalidGauge() prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_invalid_address_notices",
		Help: "Notices waiting with reason invalid_address (a malformed address, no other channel) whose window is open, at the end of the last pass: support fixes the address (scan undelivered lists them).",
	})
}
