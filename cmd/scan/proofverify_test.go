package main

import (
	"net/url"
	"os"
	"regexp"
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

// The verify CronJob's role (k8s/cronjob-proof-verify.yaml) checks the
// kept messages with exactly the GRANT lines its manifest gives, and can
// read nothing else: not a subscription's notices (scan proof), not the
// evidence, and it writes nothing.
func TestProofVerifyRunsUnderItsOwnRole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	if s, _ := f.passIn(nil); s.Sent != 2 {
		t.Fatalf("pass = %+v, want 2 sent", s)
	}
	manifest, err := os.ReadFile("../../k8s/cronjob-proof-verify.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var grants []string
	for _, m := range regexp.MustCompile(`(?m)^#\s+(GRANT SELECT .* TO scan_proof_verify;)$`).FindAllStringSubmatch(string(manifest), -1) {
		grants = append(grants, m[1])
	}
	if len(grants) < 2 {
		t.Fatalf("the manifest gives %d GRANT SELECT lines for scan_proof_verify", len(grants))
	}
	var schema string
	if err := f.db.Get(&schema, `SELECT current_schema()`); err != nil {
		t.Fatal(err)
	}
	role := schema + "_verify" // roles are the server's: named for this test's own schema
	stmts := []string{`CREATE ROLE ` + role + ` NOLOGIN`, `GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role}
	for _, g := range grants {
		stmts = append(stmts, strings.Replace(g, "scan_proof_verify;", role+";", 1))
	}
	for _, q := range stmts {
		if _, err := f.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		_, _ = f.db.Exec(`DROP OWNED BY ` + role)
		_, _ = f.db.Exec(`DROP ROLE ` + role)
	})
	// The session takes the role at connection start, as a login role's would.
	asRole := []string{"DATABASE_URL=" + f.dsn + roleParam(f.dsn, role)}
	gw := metricstest.New(t)
	code, stdout, errOut := f.runIn(append(asRole, "PUSHGATEWAY_URL="+gw.URL), "proof", "--verify", "--sample", "10")
	if code != 0 || !strings.Contains(stdout, `"verified":2`) {
		t.Fatalf("verify as %s: exit %d, %s\n%s", role, code, stdout, errOut)
	}
	wantVerifyPush(t, gw, 2, 0)
	if code, _, errOut := f.runIn(asRole, "proof", "--subscription", subID(1), "--out", t.TempDir()); code == 0 || !strings.Contains(errOut, "permission denied") {
		t.Fatalf("scan proof as the verify role: exit %d, %q; want permission denied", code, errOut)
	}
}

// roleParam is the DSN suffix that makes a session take role at start.
func roleParam(dsn, role string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return sep + "options=" + url.QueryEscape("-c role="+role)
	}
	return " options='-c role=" + role + "'"
}
