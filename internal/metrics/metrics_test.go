package metrics_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"scan/internal/metrics"
	"scan/internal/metrics/metricstest"
)

// results stand for the pass's (scan.Results) in these tests.
var results = []string{"eligible", "invalid", "minted", "retried", "suppressed", "sent", "retry", "failed", "ambiguous", "missed", "cancelled", "deferred", "deferred_quiet_hours", "fallback"}

// reconcileLabels stand for reconcile's (ledger.EventKinds,
// reconcile.Results) in these tests.
var reconcileLabels = metrics.ReconcileLabels{
	Events:  []string{"accepted", "delivered", "deferred", "bounce_soft", "bounce_hard", "complaint", "not_sent", "engagement", "other"},
	Results: []string{"settled", "overruled", "recorded", "duplicate", "stale", "unknown", "irrelevant", "malformed"},
}

func TestPushCompletedPass(t *testing.T) {
	t.Parallel()
	gw := metricstest.New(t)
	p := metrics.New(metrics.Config{Results: results, Shard: 2, Shards: 4, Domains: []string{"gmail.com"}})
	p.ObserveOutcome("sent", "GMail.com", 1500*time.Millisecond, 300*time.Millisecond, 200*time.Millisecond)
	p.ObserveOutcome("sent", "example.org", 2*time.Second, time.Second, time.Second)
	p.ObserveOutcome("claimed", "yahoo.com", 30*time.Second, -1, 0)
	oldest := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	end := time.Date(2026, 11, 30, 2, 5, 0, 0, time.UTC)
	notices := map[string]int{"eligible": 13, "invalid": 1, "minted": 3, "suppressed": 7, "sent": 2, "ambiguous": 1, "missed": 4, "deferred": 3, "fallback": 2}
	p.Finish(metrics.Counts{Notices: notices,
		Backlog: map[string]int{"gmail.com": 1, "example.org": 1, "yahoo.com": 1}, Quarantine: 5, QuarantineOldest: oldest, KeyMismatch: true, InvalidAddress: 2,
		RetryOldest: end.Add(-3 * time.Hour), WindowLength: 48 * time.Hour, Attempts: 3, Keys: 2},
		90*time.Second, true, end)
	if err := p.Push(context.Background(), gw.URL, true); err != nil {
		t.Fatal(err)
	}
	pushes := gw.Pushes()
	if len(pushes) != 1 || pushes[0].Method != http.MethodPut {
		t.Fatalf("pushes = %+v, want one PUT", pushes)
	}
	g := gw.Group("job=scan,shard=2")
	if g == nil {
		t.Fatalf("no group job=scan,shard=2; pushes: %+v", pushes[0].Grouping)
	}
	for _, result := range results {
		want := float64(notices[result]) // zero when the pass counted none
		if v, ok := metricstest.Value(g["scan_pass_notices"], map[string]string{"result": result}); !ok || v != want {
			t.Errorf("scan_pass_notices{result=%q} = %v (present %v), want %v", result, v, ok, want)
		}
	}
	gauges := map[string]float64{
		"scan_quarantine_claims":                         5,
		"scan_invalid_address_notices":                   2,
		"scan_quarantine_oldest_claim_timestamp_seconds": float64(oldest.Unix()),
		"scan_pass_duration_seconds":                     90,
		"scan_pass_success":                              1,
		"scan_last_success_timestamp_seconds":            float64(end.Unix()),
		"scan_shards":                                    4,
		"scan_key_mismatch":                              1,
		"scan_retry_oldest_age_seconds":                  3 * 3600,
		"scan_window_length_seconds":                     48 * 3600,
		"scan_attempts_per_key":                          1.5,
	}
	for name, want := range gauges {
		if v, ok := metricstest.Value(g[name], nil); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	lat := metricstest.Matching(g["scan_claim_to_commit_seconds"], map[string]string{"outcome": "sent"})
	if len(lat) != 1 || lat[0].GetHistogram().GetSampleCount() != 2 || lat[0].GetHistogram().GetSampleSum() != 3.5 {
		t.Errorf("claim-to-commit{outcome=sent} = %v, want 2 samples summing to 3.5s", lat)
	}
	for domain, want := range map[string]float64{"gmail.com": 1, "other": 2} {
		if v, ok := metricstest.Value(g["scan_domain_backlog_notices"], map[string]string{"domain": domain}); !ok || v != want {
			t.Errorf("scan_domain_backlog_notices{domain=%q} = %v (present %v), want %v", domain, v, ok, want)
		}
	}
	if n := len(g["scan_domain_backlog_notices"].GetMetric()); n != 2 {
		t.Errorf("backlog has %d series, want 2 (policy domains and other only)", n)
	}
	var toSend uint64
	for _, m := range g["scan_claim_to_send_seconds"].GetMetric() {
		toSend += m.GetHistogram().GetSampleCount()
	}
	if toSend != 2 {
		t.Errorf("claim-to-send has %d samples, want 2 (the notice never handed to the sender is not observed)", toSend)
	}
	waits := map[string]uint64{}
	for _, m := range g["scan_rate_limit_wait_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			waits[l.GetName()+"="+l.GetValue()] += m.GetHistogram().GetSampleCount()
		}
	}
	if len(waits) != 2 || waits["domain=gmail.com"] != 1 || waits["domain=other"] != 2 {
		t.Errorf("rate-limit waits by domain = %v, want gmail.com:1 other:2 (only policy domains get a label)", waits)
	}
}

// An aborted pass must not move the last success time: it POSTs, without
// that metric, so the gateway keeps the earlier completed pass's value.
func TestPushAbortedPassKeepsLastSuccess(t *testing.T) {
	t.Parallel()
	gw := metricstest.New(t)
	ok := metrics.New(metrics.Config{Results: results})
	first := time.Date(2026, 11, 29, 2, 1, 0, 0, time.UTC)
	ok.Finish(metrics.Counts{Notices: map[string]int{"sent": 3}}, time.Minute, true, first)
	if err := ok.Push(context.Background(), gw.URL, true); err != nil {
		t.Fatal(err)
	}
	bad := metrics.New(metrics.Config{Results: results})
	bad.Finish(metrics.Counts{Notices: map[string]int{"sent": 1, "ambiguous": 2}}, time.Second, false, first.Add(24*time.Hour))
	if err := bad.Push(context.Background(), gw.URL, false); err != nil {
		t.Fatal(err)
	}
	pushes := gw.Pushes()
	if len(pushes) != 2 || pushes[1].Method != http.MethodPost {
		t.Fatalf("pushes = %d, second %q; want a PUT then a POST", len(pushes), pushes[len(pushes)-1].Method)
	}
	if _, has := pushes[1].Families["scan_last_success_timestamp_seconds"]; has {
		t.Error("the aborted pass pushed scan_last_success_timestamp_seconds")
	}
	g := gw.Group("job=scan,shard=0")
	if v, _ := metricstest.Value(g["scan_last_success_timestamp_seconds"], nil); v != float64(first.Unix()) {
		t.Errorf("last success = %v, want the first pass's %v", v, first.Unix())
	}
	if v, _ := metricstest.Value(g["scan_pass_success"], nil); v != 0 {
		t.Errorf("scan_pass_success = %v, want 0 after the aborted pass", v)
	}
	if v, _ := metricstest.Value(g["scan_pass_notices"], map[string]string{"result": "ambiguous"}); v != 2 {
		t.Errorf("ambiguous = %v, want the aborted pass's 2", v)
	}
}

func TestPushFailureIsAnErrorWithoutThePassword(t *testing.T) {
	t.Parallel()
	gw := metricstest.New(t)
	gw.FailWith(http.StatusInternalServerError)
	p := metrics.New(metrics.Config{})
	withPass := strings.Replace(gw.URL, "http://", "http://push:s3cr3t-pw@", 1)
	err := p.Push(context.Background(), withPass, true)
	if err == nil {
		t.Fatal("push to a failing gateway returned nil")
	}
	if strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Errorf("error shows the password: %v", err)
	}
	if len(gw.Pushes()) != 0 {
		t.Error("the failing gateway stored a push")
	}
	if err := p.Push(context.Background(), "ftp://x", true); err == nil {
		t.Error("an ftp:// URL was accepted")
	}
}

func TestDomainLabelIsBounded(t *testing.T) {
	t.Parallel()
	p := metrics.New(metrics.Config{Domains: []string{"gmail.com", "yahoo.com"}})
	for in, want := range map[string]string{"gmail.com": "gmail.com", "YAHOO.COM": "yahoo.com", "example.org": "other", "": "other", "a@gmail.com": "other"} {
		if got := p.Domain(in); got != want {
			t.Errorf("Domain(%q) = %q, want %q", in, got, want)
		}
	}
}

// A reconcile run's counts are pushed under job scan_reconcile and its
// provider, every label combination present (zeros included), so that the
// bounce-rate alert's ratio always has its series.
func TestPushReconcile(t *testing.T) {
	t.Parallel()
	gw := metricstest.New(t)
	counts := []metrics.ReconcileCount{{Event: "bounce_hard", Result: "settled", N: 2}, {Event: "delivered", Result: "duplicate", N: 5}, {Event: "delivered", Result: "duplicate", N: 1}}
	if err := metrics.PushReconcile(context.Background(), gw.URL, nil, "ses", reconcileLabels, counts); err != nil {
		t.Fatal(err)
	}
	pushes := gw.Pushes()
	if len(pushes) != 1 || pushes[0].Method != http.MethodPut {
		t.Fatalf("pushes = %+v, want one PUT", pushes)
	}
	g := gw.Group("job=scan_reconcile,provider=ses")
	if g == nil {
		t.Fatalf("no group job=scan_reconcile,provider=ses; pushes: %+v", pushes[0].Grouping)
	}
	fam := g["scan_reconcile_events_total"]
	if n := len(metricstest.Matching(fam, nil)); n != len(reconcileLabels.Events)*len(reconcileLabels.Results) {
		t.Errorf("%d series, want every event and result", n)
	}
	for _, c := range []struct {
		event, result string
		want          float64
	}{{"bounce_hard", "settled", 2}, {"delivered", "duplicate", 6}, {"not_sent", "stale", 0}} {
		if v, ok := metricstest.Value(fam, map[string]string{"event": c.event, "result": c.result}); !ok || v != c.want {
			t.Errorf("%s/%s = %v (present %v), want %v", c.event, c.result, v, ok, c.want)
		}
	}
	if err := metrics.PushReconcile(context.Background(), "ftp://x", nil, "ses", reconcileLabels, nil); err == nil {
		t.Error("a non-http URL was accepted")
	}
}

// The help text of scan_pass_notices names every result it is pushed with.
func TestPassNoticesHelpListsEveryResult(t *testing.T) {
	t.Parallel()
	mfs, err := metrics.New(metrics.Config{Results: results}).Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "scan_pass_notices" {
			continue
		}
		if want := "(" + strings.Join(results, ", ") + ")"; !strings.Contains(mf.GetHelp(), want) {
			t.Fatalf("help %q does not list %s", mf.GetHelp(), want)
		}
		if len(mf.GetMetric()) != len(results) {
			t.Fatalf("%d series, want one per result (%d)", len(mf.GetMetric()), len(results))
		}
		return
	}
	t.Fatal("no scan_pass_notices")
}
