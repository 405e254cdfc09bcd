package main

import (
	"strings"
	"testing"

	"scan/internal/metrics/metricstest"
)

// wantVerifyPush checks the one push of a completed `scan proof --verify`
// run: the counts the alert ScanProofMismatch reads and the time the
// stale-check alert reads.
func wantVerifyPush(t *testing.T, gw *metricstest.Gateway, verified, mismatched float64) {
	t.Helper()
	g := gw.Group("job=scan_proof_verify")
	if g == nil {
		t.Fatalf("verify pushed no group job=scan_proof_verify: %+v", gw.Pushes())
	}
	for r, want := range map[string]float64{"verified": verified, "mismatched": mismatched, "missing": 0} {
		if v, ok := metricstest.Value(g["scan_proof_verify_notices"], map[string]string{"result": r}); !ok || v != want {
			t.Errorf("pushed scan_proof_verify_notices{result=%q} = %v (present %v), want %v", r, v, ok, want)
		}
	}
	if v, ok := metricstest.Value(g["scan_proof_verify_last_success_timestamp_seconds"], nil); !ok || v <= 0 {
		t.Errorf("pushed last success = %v (present %v)", v, ok)
	}
}

// A bad PUSHGATEWAY_URL is a usage error naming it, before the database
// is read; a verify that cannot reach the database pushes nothing (the
// stale-check alert then sees the last success age).
func TestProofVerifyPushUsage(t *testing.T) {
	t.Parallel()
	gw := metricstest.New(t)
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	var out, errOut strings.Builder
	code := run(t.Context(), []string{"proof", "--verify"}, env("PUSHGATEWAY_URL", "pushgateway:9091", "DATABASE_URL", "postgres://127.0.0.1:1/x?sslmode=disable&connect_timeout=2"), strings.NewReader(""), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "PUSHGATEWAY_URL") {
		t.Fatalf("bad PUSHGATEWAY_URL: exit %d, %q; want 2 naming it", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	code = run(t.Context(), []string{"proof", "--verify"}, env("PUSHGATEWAY_URL", gw.URL, "DATABASE_URL", "postgres://127.0.0.1:1/x?sslmode=disable&connect_timeout=2"), strings.NewReader(""), &out, &errOut)
	if code == 0 || len(gw.Pushes()) != 0 {
		t.Fatalf("verify with no database: exit %d, %d push(es); want a failure and no push\n%s", code, len(gw.Pushes()), errOut.String())
	}
}
