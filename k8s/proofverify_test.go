package k8s_test

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"scan/internal/policy"
)

// The proof-verify CronJob runs `scan proof --verify --sample N` once a
// day after the pass and pushes what it found (ScanProofMismatch reads
// it; ScanProofVerifyStale's 49h assume a daily run finishing within the
// hour). It connects as a role of its own (Secret scan-proof-verify, not
// the pass's `scan`), gets no other secret, and its manifest gives the
// GRANT lines cmd/scan's TestProofVerifyRunsUnderItsOwnRole runs it under.
func TestProofVerifyCronJob(t *testing.T) {
	cjs := cronJobs(t, load(t))
	cj := cjs["cronjob-proof-verify.yaml"]
	if cj == nil {
		t.Fatal("cronjob-proof-verify.yaml has no CronJob")
	}
	sched, err := policy.ParseSchedule(cj.Spec.Schedule)
	if err != nil {
		t.Fatalf("schedule %q: %v", cj.Spec.Schedule, err)
	}
	pass, err := policy.ParseSchedule(cjs["cronjob.yaml"].Spec.Schedule)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	first, passAt := sched.Next(day), pass.Next(day)
	if sched.Next(first).Sub(first) != 24*time.Hour {
		t.Errorf("schedule %q does not fire once a day (ScanProofVerifyStale assumes it)", cj.Spec.Schedule)
	}
	// After the pass and its deadline: the night's messages are kept.
	passJob := cjs["cronjob.yaml"].Spec.JobTemplate.Spec.ActiveDeadlineSeconds
	if passJob == nil || first.Before(passAt.Add(time.Duration(*passJob)*time.Second)) {
		t.Errorf("verify at %s, the pass at %s with deadline %v: want it after the pass can have ended", first.Format("15:04"), passAt.Format("15:04"), passJob)
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != "Etc/UTC" {
		t.Errorf("concurrencyPolicy %q, timeZone %v", cj.Spec.ConcurrencyPolicy, cj.Spec.TimeZone)
	}
	js := cj.Spec.JobTemplate.Spec
	checkFailurePolicy(t, js.PodFailurePolicy)
	if d := js.ActiveDeadlineSeconds; d == nil || *d <= 0 || *d > 3600 {
		t.Errorf("activeDeadlineSeconds = %v: want at most the hour ScanProofVerifyStale allows beyond two days", d)
	}
	pod := js.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("restartPolicy %q, automountServiceAccountToken %v", pod.RestartPolicy, pod.AutomountServiceAccountToken)
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("%d containers, %d init containers; want 1 and none (no migrate: its role cannot)", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]
	checkContainer(t, c)
	db := env(c, "DATABASE_URL")
	if db == nil || db.ValueFrom == nil || db.ValueFrom.SecretKeyRef == nil ||
		db.ValueFrom.SecretKeyRef.Name != "scan-proof-verify" || db.ValueFrom.SecretKeyRef.Key != "database-url" {
		t.Errorf("DATABASE_URL = %+v, want secretKeyRef scan-proof-verify/database-url (a role of its own, not the pass's)", db)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.Name != "DATABASE_URL" {
			t.Errorf("verify gets the secret %s, which it does not need", e.Name)
		}
	}
	if gw := env(c, "PUSHGATEWAY_URL"); gw == nil || gw.Value == "" {
		t.Error("no PUSHGATEWAY_URL: the counts ScanProofMismatch reads would never be pushed")
	}
	i := slices.Index(c.Args, "--sample")
	if len(c.Args) < 2 || c.Args[0] != "proof" || c.Args[1] != "--verify" || i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("args = %q, want proof --verify --sample N", c.Args)
	}
	if n, err := strconv.Atoi(c.Args[i+1]); err != nil || n < 1 {
		t.Errorf("--sample %q: want a positive count", c.Args[i+1])
	}
	if len(proofVerifyGrants(t)) < 2 {
		t.Error("the manifest's comment gives no GRANT lines for the verify role")
	}
}

var grantLine = regexp.MustCompile(`(?m)^#\s+(GRANT SELECT .* TO scan_proof_verify;)$`)

// proofVerifyGrants are the GRANT SELECT lines cronjob-proof-verify.yaml
// documents for the role scan_proof_verify.
func proofVerifyGrants(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("cronjob-proof-verify.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range grantLine.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}
