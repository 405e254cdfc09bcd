package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"scan/internal/metrics/metricstest"
	"scan/internal/scan"
)

// observePolicy is testPolicy with one domain of the fixture's four named
// in rate.domains: only it gets its own domain label in the metrics.
var observePolicy = strings.Replace(testPolicy, "rate:\n", "rate:\n  domains:\n    example.com: {per_second: 100000, burst: 10000}\n", 1)

// runCaptured runs the command in-process and returns its exit code,
// stdout and stderr.
func runCaptured(getenv func(string) string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, getenv, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func lastSummary(t *testing.T, stdout, stderr string) scan.Summary {
	t.Helper()
	return result{stdout: stdout, stderr: stderr}.summary(t)
}

// A real pass against PostgreSQL and an SMTP server pushes its metrics to
// a Pushgateway (a real HTTP server that decodes the exposition format),
// grouped by job and shard, with values that match the summary and the
// messages the SMTP server read, and no label that names a person.
func TestRunPushesMetrics(t *testing.T) {
	t.Parallel()
	const n = 40
	f := newFixture(t, n, "")
	gw := metricstest.New(t)
	pol := writePolicy(t, observePolicy)
	code, out, errOut := runCaptured(f.getenv("PUSHGATEWAY_URL="+gw.URL, "SCAN_CONFIG="+pol), "run", "--batch-size", "15")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, tail(errOut))
	}
	sum := lastSummary(t, out, errOut)
	if sum.Sent != n || f.smtp.Total() != n {
		t.Fatalf("summary sent %d, server read %d; want %d", sum.Sent, f.smtp.Total(), n)
	}
	pushes := gw.Pushes()
	if len(pushes) != 1 || pushes[0].Method != "PUT" {
		t.Fatalf("%d pushes (%v), want one PUT", len(pushes), pushes)
	}
	g := gw.Group("job=scan,shard=0")
	if g == nil {
		t.Fatalf("no group job=scan,shard=0; got grouping %v", pushes[0].Grouping)
	}
	want := map[string]int{"eligible": sum.Eligible, "minted": n, "sent": n, "suppressed": 0, "retry": 0, "failed": 0, "ambiguous": 0, "missed": 0, "invalid": 0, "retried": 0}
	for result, w := range want {
		if v, ok := metricstest.Value(g["scan_pass_notices"], map[string]string{"result": result}); !ok || v != float64(w) {
			t.Errorf("scan_pass_notices{result=%q} = %v (present %v), want %d", result, v, ok, w)
		}
	}
	if v, _ := metricstest.Value(g["scan_quarantine_claims"], nil); v != 0 {
		t.Errorf("quarantine = %v, want 0", v)
	}
	if v, _ := metricstest.Value(g["scan_pass_success"], nil); v != 1 {
		t.Errorf("scan_pass_success = %v, want 1", v)
	}
	if v, _ := metricstest.Value(g["scan_last_success_timestamp_seconds"], nil); v < float64(time.Now().Add(-time.Hour).Unix()) {
		t.Errorf("last success = %v, want about now", v)
	}
	if _, ok := metricstest.Value(g["scan_pass_duration_seconds"], nil); !ok {
		t.Error("no scan_pass_duration_seconds")
	}
	var latencies uint64
	for _, m := range g["scan_claim_to_commit_seconds"].GetMetric() {
		latencies += m.GetHistogram().GetSampleCount()
	}
	if latencies != n {
		t.Errorf("claim-to-commit histogram holds %d samples, want one per outcome (%d)", latencies, n)
	}
	// The fixture spreads recipients over example.com/.net/.org and
	// mail.test: a quarter are example.com, the rest "other".
	byDomain := map[string]uint64{}
	for _, m := range g["scan_rate_limit_wait_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			byDomain[l.GetValue()] += m.GetHistogram().GetSampleCount()
		}
	}
	if len(byDomain) != 2 || byDomain["example.com"] != n/4 || byDomain["other"] != 3*n/4 {
		t.Errorf("rate-limit waits by domain = %v, want example.com:%d other:%d", byDomain, n/4, 3*n/4)
	}
	// No label anywhere carries an address, a subscription id or a key.
	personal := regexp.MustCompile(`@|sub_\d|[0-9a-f]{12}`)
	for name, mf := range g {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if personal.MatchString(l.GetValue()) {
					t.Errorf("%s has label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}

	if v, ok := metricstest.Value(g["scan_key_mismatch"], nil); !ok || v != 0 {
		t.Errorf("scan_key_mismatch = %v (present %v), want 0", v, ok)
	}

	// A pass with another secret pushes the key mismatch its summary
	// reports, for the ScanKeyMismatch alert.
	const other = "a-completely-different-secret-0123456789"
	code, out, errOut = runCaptured(f.getenv("PUSHGATEWAY_URL="+gw.URL, "SCAN_CONFIG="+pol, "NOTICE_KEY_SECRET="+other), "run")
	if code != 0 || !lastSummary(t, out, errOut).KeyMismatch {
		t.Fatalf("pass with another secret: exit %d, no key_mismatch\n%s", code, tail(errOut))
	}
	if v, _ := metricstest.Value(gw.Group("job=scan,shard=0")["scan_key_mismatch"], nil); v != 1 {
		t.Errorf("after a pass with another secret, scan_key_mismatch = %v, want 1", v)
	}
}

// A shard pushes into its own group, so N shards never overwrite each
// other's metrics.
func TestRunPushesPerShard(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20, "")
	gw := metricstest.New(t)
	sent := 0
	for _, shard := range []string{"0/2", "1/2"} {
		code, out, errOut := runCaptured(f.getenv("PUSHGATEWAY_URL="+gw.URL), "run", "--shard", shard)
		if code != 0 {
			t.Fatalf("shard %s: exit %d\n%s", shard, code, tail(errOut))
		}
		sent += lastSummary(t, out, errOut).Sent
	}
	total := 0.0
	for _, key := range []string{"job=scan,shard=0", "job=scan,shard=1"} {
		g := gw.Group(key)
		if g == nil {
			t.Fatalf("no group %s", key)
		}
		v, _ := metricstest.Value(g["scan_pass_notices"], map[string]string{"result": "sent"})
		total += v
		if s, _ := metricstest.Value(g["scan_shards"], nil); s != 2 {
			t.Errorf("%s: scan_shards = %v, want 2", key, s)
		}
	}
	if sent != 20 || total != 20 {
		t.Errorf("shards sent %d (metrics %v), want 20", sent, total)
	}
}

// A Pushgateway that fails is logged (with run_id and shard) and never
// fails the pass.
func TestRunPushFailureDoesNotFailThePass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, "")
	gw := metricstest.New(t)
	gw.FailWith(500)
	code, out, errOut := runCaptured(f.getenv("PUSHGATEWAY_URL="+gw.URL), "run")
	if code != 0 {
		t.Fatalf("exit %d with a failing Pushgateway\n%s", code, tail(errOut))
	}
	if s := lastSummary(t, out, errOut); s.Sent != 5 {
		t.Errorf("sent %d, want 5", s.Sent)
	}
	found := false
	for _, line := range logLines(t, errOut) {
		if line["message"] == "could not push the pass's metrics; the pass itself is unaffected" {
			found = true
			if line["level"] != "warn" || line["run_id"] == nil || line["shard"] == nil {
				t.Errorf("push failure line %v: want warn with run_id and shard", line)
			}
		}
	}
	if !found {
		t.Errorf("no push failure line in the log:\n%s", tail(errOut))
	}
}

func logLines(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "{") {
			continue // the final "scan: ..." line of a failed command
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// Every log line of a pass is JSON with run_id and shard; none carries an
// address, a name, a subscription id or a whole key; a key appears as its
// first 12 characters; per-notice lines are debug, per-batch lines info.
func TestRunLogLines(t *testing.T) {
	t.Parallel()
	const n = 30
	f := newFixture(t, n, "")
	// One row is invalid, so the invalid-row warning is checked too.
	if _, err := f.db.Exec(`UPDATE subscriptions SET email = 'not-an-address' WHERE id = 'sub_000007'`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCaptured(f.getenv("LOG_LEVEL=debug"), "run", "--batch-size", "10", "--shard", "0/1")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, tail(errOut))
	}
	sum := lastSummary(t, out, errOut)
	lines := logLines(t, errOut)
	if len(lines) == 0 {
		t.Fatal("no log lines")
	}
	perNotice, batches := 0, 0
	fullKey := regexp.MustCompile(`[0-9a-f]{13,}`)
	for _, l := range lines {
		raw, _ := json.Marshal(l)
		if l["run_id"] != sum.RunID || l["shard"] != float64(0) {
			t.Errorf("line without run_id %s and shard 0: %s", sum.RunID, raw)
		}
		if l["message"] == "invalid subscription row skipped; nothing claimed" {
			// internal/scan names the invalid row by subscription id on
			// purpose (badrows_test.go), so an operator can fix it.
			delete(l, "subscription_id")
			raw, _ = json.Marshal(l)
		}
		s := string(raw)
		if strings.Contains(s, "@") || strings.Contains(s, "sub_0") || strings.Contains(s, "User ") || fullKey.MatchString(s) {
			t.Errorf("line carries an address, subscription id, name or whole key: %s", s)
		}
		if k, ok := l["key"].(string); ok && len(k) != 12 {
			t.Errorf("key field %q is not 12 characters", k)
		}
		switch l["message"] {
		case "notice outcome":
			perNotice++
			if l["level"] != "debug" {
				t.Errorf("per-notice line at %v: %s", l["level"], raw)
			}
		case "batch claimed":
			batches++
			if l["level"] != "info" {
				t.Errorf("batch line at %v: %s", l["level"], raw)
			}
		}
	}
	if perNotice != n-1 || batches < 3 {
		t.Errorf("%d per-notice lines (want %d), %d batch lines (want 3 or more)", perNotice, n-1, batches)
	}
	// At info, no per-notice line at all.
	g := newFixture(t, 10, "")
	_, _, errOut = runCaptured(g.getenv("LOG_LEVEL=info"), "run")
	for _, l := range logLines(t, errOut) {
		if l["message"] == "notice outcome" {
			t.Errorf("per-notice line at LOG_LEVEL=info: %v", l)
		}
	}
}

// A PUSHGATEWAY_URL that is not an http(s) URL is a usage error before the
// pass writes anything, not a warning every night.
func TestRunBadPushgatewayURL(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, "")
	for _, bad := range []string{"pushgateway:9091", "ftp://pushgateway:9091", "http://"} {
		code, _, errOut := runCaptured(f.getenv("PUSHGATEWAY_URL="+bad), "run")
		if code != exitUsage || !strings.Contains(errOut, "PUSHGATEWAY_URL") {
			t.Errorf("PUSHGATEWAY_URL=%s: exit %d, want 2 naming the variable\n%s", bad, code, tail(errOut))
		}
		code, _, errOut = runCaptured(f.getenv("PUSHGATEWAY_URL="+bad), "schedule", "--cron", "@every 1s")
		if code != exitUsage {
			t.Errorf("schedule with PUSHGATEWAY_URL=%s: exit %d, want 2\n%s", bad, code, tail(errOut))
		}
	}
	if c := f.counts(); len(c) != 0 {
		t.Errorf("ledger rows written: %v", c)
	}
}
