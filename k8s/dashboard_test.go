package k8s_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/util/intstr"

	"scan/internal/metrics"
	"scan/internal/scan"
)

// dashboard is the part of a Grafana dashboard this test reads.
type dashboard struct {
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	UID    string  `json:"uid"`
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int               `json:"id"`
	Type       string            `json:"type"`
	Title      string            `json:"title"`
	Datasource map[string]string `json:"datasource"`
	Targets    []struct {
		RefID      string            `json:"refId"`
		Expr       string            `json:"expr"`
		Datasource map[string]string `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	return d
}

// flatten returns every panel, rows' inner panels included.
func flatten(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatten(p.Panels)...)
	}
	return out
}

// The dashboard imports as is: a Prometheus data source input that every
// query uses, a uid, unique panel ids, and at least one query per
// non-row panel.
func TestDashboardImportable(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both needed", d.UID, d.Title)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].PluginID != "prometheus" {
		t.Fatalf("__inputs = %+v, want one Prometheus data source DS_PROMETHEUS", d.Inputs)
	}
	ids := map[int]bool{}
	for _, p := range flatten(d.Panels) {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, ds := range []map[string]string{p.Datasource} {
			if ds["uid"] != "${DS_PROMETHEUS}" {
				t.Errorf("panel %q: data source %v, want uid ${DS_PROMETHEUS}", p.Title, ds)
			}
		}
		for _, tg := range p.Targets {
			if tg.Datasource["uid"] != "${DS_PROMETHEUS}" {
				t.Errorf("panel %q query %s: data source %v, want uid ${DS_PROMETHEUS}", p.Title, tg.RefID, tg.Datasource)
			}
		}
	}
	// What the issue asks the dashboard to show.
	var exprs string
	for _, p := range flatten(d.Panels) {
		for _, tg := range p.Targets {
			exprs += tg.Expr + "\n"
		}
	}
	for _, want := range []string{
		"scan_pass_notices", "scan_quarantine_claims", "scan_quarantine_oldest_claim_timestamp_seconds",
		"histogram_quantile(0.99, sum by (le) (scan_claim_to_commit_seconds_bucket",
		"sum by (le, domain) (scan_rate_limit_wait_seconds_bucket", "scan_pass_duration_seconds",
	} {
		if !strings.Contains(exprs, want) {
			t.Errorf("no panel query contains %q", want)
		}
	}
}

// Every panel's query parses (promtool check rules, each query as a
// recording rule) and names only metrics the job pushes.
func TestDashboardQueries(t *testing.T) {
	d := loadDashboard(t)
	pushed := pushedMetrics(t)
	var rules []monitoringv1.Rule
	for _, p := range flatten(d.Panels) {
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q query %s is empty", p.Title, tg.RefID)
				continue
			}
			names, err := metricNames(tg.Expr)
			if err != nil {
				t.Errorf("panel %q query %s: %v", p.Title, tg.RefID, err)
			}
			if len(names) == 0 {
				t.Errorf("panel %q query %s names no metric: %s", p.Title, tg.RefID, tg.Expr)
			}
			for _, n := range names {
				if !pushed[n] {
					t.Errorf("panel %q query %s: %s is not a metric the job pushes", p.Title, tg.RefID, n)
				}
			}
			rules = append(rules, monitoringv1.Rule{
				Record: fmt.Sprintf("dashboard:panel_%d:%s", p.ID, strings.ToLower(tg.RefID)),
				Expr:   intstr.FromString(tg.Expr),
			})
		}
	}
	// The name check can fail.
	if names, _ := metricNames(`sum(scan_pass_notices{result="sent"}) / scan_pass_sent_total`); !slices.Contains(names, "scan_pass_sent_total") || pushed["scan_pass_sent_total"] {
		t.Errorf("metricNames missed a bare metric name: %v", names)
	}

	promtool(t)
	dir := t.TempDir()
	writeRuleFile(t, dir, monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "dashboard", Rules: rules}}})
	runPromtool(t, dir, "check", "rules", "rules.yaml")
}

// pushedMetrics returns the names of the series the job pushes: each
// metric family of a pass's registry, with the _bucket, _sum and _count
// series of its histograms.
func pushedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	p := metrics.New(metrics.Config{Results: scan.ResultNames()})
	p.ObserveOutcome("sent", "example.org", time.Second, time.Second, time.Second) // histograms appear once observed
	// The objective's gauges appear once the pass counted it.
	p.Finish(metrics.Counts{Objective: []metrics.ObjectiveCount{{Period: "1d"}}}, time.Second, true, time.Unix(0, 0))
	mfs, err := p.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		out[mf.GetName()] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[mf.GetName()+s] = true
			}
		}
	}
	if !out["scan_claim_to_commit_seconds_bucket"] || !out["scan_pass_notices"] {
		t.Fatalf("the registry lacks known metrics: %v", out)
	}
	return out
}

var (
	stringLit = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	token     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*|\{[^}]*\}|\[[^\]]*\]|[0-9][0-9.eE]*(?:ms|[smhdwy])?|\S`)
	// Keywords and the operators spelt as words; grouping modifiers take
	// a parenthesised list of label names.
	keywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true, "Inf": true, "NaN": true}
	grouping = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// metricNames returns the metric names a PromQL expression selects: every
// identifier that is not a function or aggregation (followed by "(" or
// by/without), a
// keyword, a label name inside {...}, or a label list of by/on/....
func metricNames(expr string) ([]string, error) {
	toks := token.FindAllString(stringLit.ReplaceAllString(expr, `""`), -1)
	var names []string
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		next := ""
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case grouping[tok]:
			if next == "(" {
				for i++; i < len(toks) && toks[i] != ")"; i++ {
				}
				if i == len(toks) {
					return names, fmt.Errorf("unclosed %s (...)", tok)
				}
			}
		case keywords[tok]:
		case tok[0] == '_' || tok[0] == ':' || tok[0] >= 'A' && tok[0] <= 'Z' || tok[0] >= 'a' && tok[0] <= 'z':
			if next == "(" || grouping[next] {
				continue // a function or an aggregation ("sum by (le) (...)")
			}
			if !slices.Contains(names, tok) {
				names = append(names, tok)
			}
		}
	}
	return names, nil
}
