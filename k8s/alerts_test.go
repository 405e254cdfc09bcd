package k8s_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

	"scan/internal/metrics"
)

// promtool returns the path of promtool, or skips the test: Debian's
// prometheus package ships it, and .ci/run installs that package, so CI
// always runs these tests.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found: install Debian's prometheus package (apt-get install --no-install-recommends prometheus; .ci/run does) to run the alert and dashboard query tests")
	}
	return p
}

// runPromtool runs promtool with args in dir and fails the test with its
// output when it exits non-zero.
func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// prometheusRule returns the one PrometheusRule of prometheusrule.yaml.
func prometheusRule(t *testing.T) *monitoringv1.PrometheusRule {
	t.Helper()
	var rules []*monitoringv1.PrometheusRule
	for _, d := range load(t) {
		if r, ok := d.obj.(*monitoringv1.PrometheusRule); ok {
			if d.file != "prometheusrule.yaml" {
				t.Errorf("%s: a PrometheusRule outside prometheusrule.yaml", d.file)
			}
			rules = append(rules, r)
		}
	}
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(rules))
	}
	return rules[0]
}

// writeRuleFile writes the groups of a PrometheusRule as the rule file
// Prometheus itself reads (what the operator generates from it).
func writeRuleFile(t *testing.T, dir string, spec monitoringv1.PrometheusRuleSpec) {
	t.Helper()
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The alerts the runbook (docs/operations.md) documents, one per condition of the
// operator's day two.
var wantAlerts = []string{
	"ScanNoRecentSuccess", "ScanPassFailed", "ScanQuarantineStale", "ScanMissedNotices",
	"ScanFailedShareHigh", "ScanKeyMismatch", "ScanDeferredTwice", "ScanInvalidAddressPersisting", "ScanShardsMissing",
	"ScanBounceRateHigh", "ScanComplaintRateHigh", "ScanUndeliveredGrowing",
	"ScanProofMismatch", "ScanProofVerifyStale",
	"ScanQuarantineNonZero", "ScanClaimToCommitGapGrowing", "ScanRetryAgeBeyondWindow", "ScanAttemptsPerKeyHigh",
	"ScanReceiverDown", "ScanReceiveRejectionsHigh",
	"ScanObjectiveBurnFast", "ScanObjectiveBurnSlow",
}

// Every alert has a severity, a summary and a runbook link to a section of
// docs/operations.md that exists.
func TestAlertsAnnotated(t *testing.T) {
	pr := prometheusRule(t)
	readme, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := readmeAnchors(readme)
	var got []string
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			got = append(got, r.Alert)
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
			}
			if strings.TrimSpace(r.Annotations["summary"]) == "" {
				t.Errorf("%s: no summary", r.Alert)
			}
			link := r.Annotations["runbook_url"]
			const prefix = "https://github.com/example/scan/blob/main/docs/operations.md#"
			anchor, ok := strings.CutPrefix(link, prefix)
			if !ok {
				t.Errorf("%s: runbook_url %q does not start with %s", r.Alert, link, prefix)
			} else if !anchors[anchor] {
				t.Errorf("%s: runbook_url anchor #%s is no heading of docs/operations.md", r.Alert, anchor)
			}
		}
	}
	slices.Sort(got)
	want := slices.Clone(wantAlerts)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("alerts = %v, want %v", got, want)
	}
}

// pushedElsewhere are the metrics an alert may name besides a pass's: the
// Pushgateway's own time of a group's last push, and what each `scan
// reconcile` run pushes (group job="scan_reconcile") and what `scan
// undelivered` pushes (job="scan_undelivered").
var pushedElsewhere = []string{"push_time_seconds", "scan_reconcile_events_total", "scan_undelivered_notices"}

// scraped are the metrics of `scan receive`, a server that Prometheus
// scrapes: its own, and the scrape's up.
var scraped = []string{"up", "scan_receive_requests_total"}

// Every alert and recording rule names only metrics that are pushed, or
// recorded by a rule: an alert on a misspelt or renamed metric never fires.
func TestAlertsNamePushedMetrics(t *testing.T) {
	pushed := pushedMetrics(t)
	for _, n := range append(slices.Clone(pushedElsewhere), scraped...) {
		pushed[n] = true
	}
	// What `scan proof --verify` pushes (job="scan_proof_verify").
	mfs, err := metrics.ProofVerifyRegistry(metrics.ProofVerifyCounts{}, time.Unix(0, 0)).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		pushed[mf.GetName()] = true
	}
	groups := prometheusRule(t).Spec.Groups
	for _, g := range groups { // a recording rule's series is known to the rules after it
		for _, r := range g.Rules {
			if r.Record != "" {
				pushed[r.Record] = true
			}
		}
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			names, err := metricNames(r.Expr.String())
			if err != nil || len(names) == 0 {
				t.Errorf("%s%s: metric names %v, %v", r.Alert, r.Record, names, err)
			}
			for _, n := range names {
				if !pushed[n] {
					t.Errorf("%s%s: %s is no metric the jobs push", r.Alert, r.Record, n)
				}
			}
		}
	}
}

var headingRe = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*$`)

// readmeAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation but - and _ dropped, spaces as -.
// It ignores headings inside code blocks only in that they rarely start a
// line with # followed by text an alert would link to.
func readmeAnchors(md []byte) map[string]bool {
	out := map[string]bool{}
	for _, m := range headingRe.FindAllSubmatch(md, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(string(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

// alertTests is the part of a promtool unit-test file this test reads.
type alertTests struct {
	Tests []struct {
		Name      string `json:"name"`
		AlertTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// The rules pass `promtool check rules`, and the unit tests in
// testdata/alerts_test.yaml, which hold for every alert a case where it
// fires and one where it does not, pass `promtool test rules`.
func TestAlertRulesWithPromtool(t *testing.T) {
	pr := prometheusRule(t)
	tests, err := os.ReadFile("testdata/alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var at alertTests
	if err := yaml.Unmarshal(tests, &at); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range at.Tests {
		for _, a := range tc.AlertTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, name := range wantAlerts {
		if !fires[name] || !quiet[name] {
			t.Errorf("%s: testdata/alerts_test.yaml needs a case where it fires (%v) and one where it does not (%v)", name, fires[name], quiet[name])
		}
	}

	promtool(t)
	dir := t.TempDir()
	writeRuleFile(t, dir, pr.Spec)
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "check", "rules", "rules.yaml")
	runPromtool(t, dir, "test", "rules", "alerts_test.yaml")

	// The tests can fail: an alert whose threshold moved no longer
	// matches its expected firing.
	broken := bytes.Replace(tests, []byte("values: '0x10 4x10'"), []byte("values: '0x10 0x10'"), 1)
	if bytes.Equal(broken, tests) {
		t.Fatal("the missed-notices series is no longer in the test file; update this check")
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), broken, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool(t), "test", "rules", "alerts_test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("promtool test rules passed with a missed-notices series that never fires:\n%s", out)
	}
}
