package metrics_test

import (
	"context"
	"testing"
	"time"

	"scan/internal/metrics"
	"scan/internal/metrics/metricstest"
)

// The delivery objective is pushed as gauges labelled by period; a pass
// that could not count it pushes no period series (no false zero), only
// whether the email sender confirms delivery.
func TestPushObjective(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 11, 30, 2, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		counts   []metrics.ObjectiveCount
		confirms bool
	}{
		{"counted", []metrics.ObjectiveCount{{"6h", 40, 38, 37, 40}, {"30d", 3000, 2990, 2980, 2995}}, true},
		{"not counted", nil, false},
	} {
		gw := metricstest.New(t)
		p := metrics.New(metrics.Config{Results: results})
		p.Finish(metrics.Counts{Objective: tc.counts, EmailConfirms: tc.confirms}, time.Second, true, end)
		if err := p.Push(context.Background(), gw.URL, true); err != nil {
			t.Fatal(err)
		}
		g := gw.Group("job=scan,shard=0")
		want := 0.0
		if tc.confirms {
			want = 1
		}
		if v, ok := metricstest.Value(g["scan_slo_email_delivery_confirmed"], nil); !ok || v != want {
			t.Errorf("%s: scan_slo_email_delivery_confirmed = %v (present %v), want %v", tc.name, v, ok, want)
		}
		for _, name := range []string{"scan_slo_notices_due", "scan_slo_notices_reached", "scan_slo_notices_delivered", "scan_slo_notices_accepted"} {
			if n := len(metricstest.Matching(g[name], nil)); n != len(tc.counts) {
				t.Errorf("%s: %d series of %s, want %d", tc.name, n, name, len(tc.counts))
			}
		}
		for _, c := range tc.counts {
			l := map[string]string{"period": c.Period}
			for name, want := range map[string]int{"scan_slo_notices_due": c.Due, "scan_slo_notices_reached": c.Reached,
				"scan_slo_notices_delivered": c.Delivered, "scan_slo_notices_accepted": c.Accepted} {
				if v, ok := metricstest.Value(g[name], l); !ok || v != float64(want) {
					t.Errorf("%s: %s{period=%q} = %v (present %v), want %d", tc.name, name, c.Period, v, ok, want)
				}
			}
		}
	}
}
