package metrics_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"scan/internal/metrics"
	"scan/internal/metrics/metricstest"
)

// A completed verify run replaces its group with every result, zeros
// included, and the time it completed.
func TestPushProofVerify(t *testing.T) {
	t.Parallel()
	gw := metricstest.New(t)
	end := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	c := metrics.ProofVerifyCounts{Verified: 997, Mismatched: 1, Missing: 0}
	if err := metrics.PushProofVerify(context.Background(), gw.URL, nil, c, end); err != nil {
		t.Fatal(err)
	}
	pushes := gw.Pushes()
	if len(pushes) != 1 || pushes[0].Method != http.MethodPut {
		t.Fatalf("pushes = %+v, want one PUT", pushes)
	}
	g := gw.Group("job=scan_proof_verify")
	if g == nil {
		t.Fatalf("no group job=scan_proof_verify; pushes: %+v", pushes[0].Grouping)
	}
	fam := g["scan_proof_verify_notices"]
	for r, want := range map[string]float64{"verified": 997, "mismatched": 1, "missing": 0} {
		if v, ok := metricstest.Value(fam, map[string]string{"result": r}); !ok || v != want {
			t.Errorf("result %s = %v (present %v), want %v", r, v, ok, want)
		}
	}
	if n := len(metricstest.Matching(fam, nil)); n != len(metrics.ProofVerifyResults) {
		t.Errorf("%d series, want %d", n, len(metrics.ProofVerifyResults))
	}
	if v, ok := metricstest.Value(g["scan_proof_verify_last_success_timestamp_seconds"], nil); !ok || v != float64(end.Unix()) {
		t.Errorf("last success = %v (present %v), want %d", v, ok, end.Unix())
	}
	if err := metrics.PushProofVerify(context.Background(), "ftp://x", nil, c, end); err == nil {
		t.Error("a non-http URL was accepted")
	}
}
