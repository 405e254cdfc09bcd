// Package metricstest runs an in-process Pushgateway for tests: a real HTTP
// server on 127.0.0.1 that decodes every push with the exposition-format
// decoder of github.com/prometheus/common/expfmt (whatever format the
// client sends) and keeps the groups as the Pushgateway does: PUT replaces
// a group, POST replaces only the metric families it carries, DELETE drops
// the group.
//
// Tests synchronise on Wait, never on sleeps. The server stops when the
// test ends. A Gateway is safe for concurrent use.
package metricstest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Push is one request the gateway accepted.
type Push struct {
	Method   string            // PUT, POST or DELETE
	Grouping map[string]string // job and the other grouping labels
	Families map[string]*dto.MetricFamily
}

// Gateway is a running test Pushgateway.
type Gateway struct {
	URL string

	status atomic.Int32 // reply status; 0 means 200

	mu      sync.Mutex
	pushes  []Push
	groups  map[string]map[string]*dto.MetricFamily // Key(grouping) -> families
	changed chan struct{}
}

// New starts a gateway for the duration of t.
func New(t testing.TB) *Gateway {
	t.Helper()
	g := &Gateway{groups: map[string]map[string]*dto.MetricFamily{}, changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// FailWith makes the gateway answer every later push with status code
// (e.g. 500) without storing it; 0 or 200 restores normal service.
func (g *Gateway) FailWith(code int) { g.status.Store(int32(code)) }

// Key returns the canonical key of a grouping: "job=scan,shard=0", labels
// sorted by name.
func Key(grouping map[string]string) string {
	names := make([]string, 0, len(grouping))
	for n := range grouping {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + grouping[n]
	}
	return strings.Join(parts, ",")
}

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	if code := g.status.Load(); code != 0 && code != http.StatusOK {
		http.Error(w, "metricstest: failing on purpose", int(code))
		return
	}
	grouping, err := parseGrouping(r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fams := map[string]*dto.MetricFamily{}
	if r.Method == http.MethodPut || r.Method == http.MethodPost {
		dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				http.Error(w, "decode: "+err.Error(), http.StatusBadRequest)
				return
			}
			fams[mf.GetName()] = mf
		}
	} else if r.Method != http.MethodDelete {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	key := Key(grouping)
	g.mu.Lock()
	switch r.Method {
	case http.MethodPut:
		g.groups[key] = fams
	case http.MethodPost:
		if g.groups[key] == nil {
			g.groups[key] = map[string]*dto.MetricFamily{}
		}
		for n, mf := range fams {
			g.groups[key][n] = mf
		}
	case http.MethodDelete:
		delete(g.groups, key)
	}
	g.pushes = append(g.pushes, Push{Method: r.Method, Grouping: grouping, Families: fams})
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// parseGrouping reads /metrics/job/NAME[/LABEL/VALUE...], with the
// Pushgateway's LABEL@base64 encoding for values that hold a slash.
func parseGrouping(path string) (map[string]string, error) {
	rest, ok := strings.CutPrefix(path, "/metrics/")
	if !ok {
		return nil, fmt.Errorf("path %q does not start with /metrics/", path)
	}
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	if len(segs)%2 != 0 || len(segs) < 2 || segs[0] != "job" && segs[0] != "job@base64" {
		return nil, fmt.Errorf("path %q is not /metrics/job/NAME followed by LABEL/VALUE pairs", path)
	}
	out := map[string]string{}
	for i := 0; i < len(segs); i += 2 {
		name, val := segs[i], segs[i+1]
		if n, ok := strings.CutSuffix(name, "@base64"); ok {
			b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(val, "="))
			if err != nil {
				return nil, fmt.Errorf("label %s: %v", n, err)
			}
			name, val = n, string(b)
		}
		out[name] = val
	}
	return out, nil
}

// Pushes returns every accepted push so far, oldest first.
func (g *Gateway) Pushes() []Push {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Push(nil), g.pushes...)
}

// Group returns the metric families the gateway holds for a grouping key
// (see Key), or nil.
func (g *Gateway) Group(key string) map[string]*dto.MetricFamily {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]*dto.MetricFamily{}
	for n, mf := range g.groups[key] {
		out[n] = mf
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Wait blocks until the gateway has accepted at least n pushes or ctx ends.
func (g *Gateway) Wait(ctx context.Context, n int) error {
	for {
		g.mu.Lock()
		have, ch := len(g.pushes), g.changed
		g.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("metricstest: %d of %d pushes: %w", have, n, ctx.Err())
		case <-ch:
		}
	}
}

// Value returns the value of the gauge, counter or untyped metric of mf
// whose labels include every name=value pair of labels, and whether there
// is one.
func Value(mf *dto.MetricFamily, labels map[string]string) (float64, bool) {
	for _, m := range Matching(mf, labels) {
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// Matching returns the metrics of mf whose labels include every pair of
// labels.
func Matching(mf *dto.MetricFamily, labels map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		ok := true
		for n, v := range labels {
			if have[n] != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}
