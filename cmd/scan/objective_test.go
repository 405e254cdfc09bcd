package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scan/internal/metrics/metricstest"
)

// Issue 36 §6 through the binary's own pass: four notices sent, two with
// the provider's delivered event; a pass after their windows closed pushes
// the delivery objective counted from the ledger: 4 due in the trailing
// 6h, 2 reached (delivered), 4 accepted, and the email sender confirms
// delivery (policy provider ses).
func TestPassPushesTheDeliveryObjective(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, "")
	f.withProvider("ses")
	if s, _ := f.passIn(nil); s.Sent != 4 {
		t.Fatalf("first pass = %+v, want 4 sent", s)
	}
	var b strings.Builder
	for _, m := range f.smtp.Messages()[:2] {
		line, _ := json.Marshal(map[string]any{"message_id": "<" + m.MessageID + ">", "event": "delivered"})
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "delivered.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f.reconcileFile("jsonl", path)

	gw := metricstest.New(t)
	closed := f.renews.Add(-24 * time.Hour).Add(time.Hour) // an hour after every window closed
	f.passIn([]string{"PUSHGATEWAY_URL=" + gw.URL}, "--now", closed.Format(time.RFC3339))
	g := gw.Group("job=scan,shard=0")
	want := map[string]map[string]float64{
		"1h":  {"scan_slo_notices_due": 0, "scan_slo_notices_reached": 0},
		"6h":  {"scan_slo_notices_due": 4, "scan_slo_notices_reached": 2, "scan_slo_notices_delivered": 2, "scan_slo_notices_accepted": 4},
		"30d": {"scan_slo_notices_due": 4, "scan_slo_notices_reached": 2},
	}
	for period, ms := range want {
		for name, w := range ms {
			if v, ok := metricstest.Value(g[name], map[string]string{"period": period}); !ok || v != w {
				t.Errorf("%s{period=%q} = %v (present %v), want %v", name, period, v, ok, w)
			}
		}
	}
	if v, ok := metricstest.Value(g["scan_slo_email_delivery_confirmed"], nil); !ok || v != 1 {
		t.Errorf("scan_slo_email_delivery_confirmed = %v (present %v), want 1", v, ok)
	}
}
