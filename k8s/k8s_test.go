package k8s_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"scan/internal/policy"
	"scan/internal/scan"
)

// doc is one YAML document of a manifest file, decoded.
type doc struct {
	file string
	obj  any // *batchv1.CronJob, *corev1.ConfigMap or *monitoringv1.PrometheusRule
}

var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeStrict decodes one document into the API type of its kind, rejecting
// unknown and duplicate fields. sigs.k8s.io/yaml's UnmarshalStrict matches
// field names case-insensitively (encoding/json does), which the API server
// does not: a second, case-sensitive pass with sigs.k8s.io/json (the
// server's decoder) rejects "runAsNonroot" and the like.
func decodeStrict(raw []byte) (any, error) {
	obj, err := newObject(raw)
	if err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, err
	}
	again, _ := newObject(raw)
	strictErrs, err := sigsjson.UnmarshalStrict(j, again)
	if err != nil {
		return nil, err
	}
	if len(strictErrs) > 0 {
		return nil, errors.Join(strictErrs...)
	}
	return obj, nil
}

// newObject returns a new object of the API type of the document's kind.
func newObject(raw []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(raw, &tm); err != nil {
		return nil, err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "batch/v1 CronJob":
		obj = &batchv1.CronJob{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		obj = &monitoringv1.PrometheusRule{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &monitoringv1.ServiceMonitor{}
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "networking.k8s.io/v1 NetworkPolicy":
		obj = &networkingv1.NetworkPolicy{}
	default:
		return nil, &unknownKind{tm}
	}
	return obj, nil
}

type unknownKind struct{ tm metav1.TypeMeta }

func (u *unknownKind) Error() string {
	return "no test decodes " + u.tm.APIVersion + " " + u.tm.Kind + "; add it to decodeStrict"
}

// load decodes every document of every manifest in this directory.
func load(t *testing.T) []doc {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no manifests")
	}
	var docs []doc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, raw := range separator.Split(string(b), -1) {
			if isEmpty(raw) {
				continue
			}
			obj, err := decodeStrict([]byte(raw))
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i+1, err)
			}
			docs = append(docs, doc{file: f, obj: obj})
		}
	}
	return docs
}

// isEmpty reports whether a document holds only comments and blank lines.
func isEmpty(raw string) bool {
	for _, line := range strings.Split(raw, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

func cronJobs(t *testing.T, docs []doc) map[string]*batchv1.CronJob {
	out := map[string]*batchv1.CronJob{}
	for _, d := range docs {
		if cj, ok := d.obj.(*batchv1.CronJob); ok {
			out[d.file] = cj
		}
	}
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	docs := load(t)
	var files []string
	for _, d := range docs {
		if !slices.Contains(files, d.file) {
			files = append(files, d.file)
		}
	}
	for _, want := range []string{"configmap.yaml", "cronjob.yaml", "cronjob-indexed.yaml", "cronjob-reconcile-sqs.yaml", "cronjob-undelivered.yaml", "cronjob-proof-verify.yaml", "prometheusrule.yaml", "receive.yaml"} {
		if !slices.Contains(files, want) {
			t.Errorf("%s: no document decoded", want)
		}
	}

	// The decoder really is strict: a misspelt field fails.
	b, err := os.ReadFile("cronjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(b, []byte("concurrencyPolicy:"), []byte("concurencyPolicy:"), 1)
	if _, err := decodeStrict(bad); err == nil {
		t.Error("a misspelt field was accepted")
	}
	bad = bytes.Replace(b, []byte("readOnlyRootFilesystem: true"), []byte("readOnlyRootFilesystem: true\n                readOnlyRootFileSystem: true"), 1)
	if _, err := decodeStrict(bad); err == nil {
		t.Error("a field in the wrong case was accepted")
	}
	bad = bytes.Replace(b, []byte("runAsNonRoot: true"), []byte("runAsNonroot: true"), 1)
	if _, err := decodeStrict(bad); err == nil {
		t.Error("a field in the wrong case was accepted")
	}
	bad = bytes.Replace(b, []byte("concurrencyPolicy: Forbid"), []byte("concurrencyPolicy: Forbid\n  concurrencyPolicy: Allow"), 1)
	if _, err := decodeStrict(bad); err == nil {
		t.Error("a duplicate field was accepted")
	}
}

func TestCronJobs(t *testing.T) {
	jobs := cronJobs(t, load(t))
	for file, wantArgs := range map[string][]string{
		"cronjob.yaml":         {"run"},
		"cronjob-indexed.yaml": {"run", "--shards", "4"},
	} {
		t.Run(file, func(t *testing.T) {
			cj := jobs[file]
			if cj == nil {
				t.Fatalf("%s has no CronJob", file)
			}
			checkCronJob(t, cj, wantArgs, file == "cronjob-indexed.yaml")
		})
	}
}

func checkCronJob(t *testing.T, cj *batchv1.CronJob, wantArgs []string, indexed bool) {
	t.Helper()
	s := cj.Spec
	if s.Schedule != "0 2 * * *" {
		t.Errorf("schedule = %q", s.Schedule)
	}
	if s.TimeZone == nil || *s.TimeZone != "Etc/UTC" {
		t.Errorf("timeZone = %v, want Etc/UTC", s.TimeZone)
	}
	if s.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy = %q", s.ConcurrencyPolicy)
	}
	// A start missed by more than a day would collide with the next one.
	if d := s.StartingDeadlineSeconds; d == nil || *d <= 0 || *d >= 24*3600 {
		t.Errorf("startingDeadlineSeconds = %v, want in (0, 86400)", d)
	}
	if h := s.SuccessfulJobsHistoryLimit; h == nil || *h < 1 {
		t.Errorf("successfulJobsHistoryLimit = %v", h)
	}
	if h := s.FailedJobsHistoryLimit; h == nil || *h < 1 {
		t.Errorf("failedJobsHistoryLimit = %v", h)
	}

	js := s.JobTemplate.Spec
	if js.BackoffLimit == nil || *js.BackoffLimit < 1 {
		t.Errorf("backoffLimit = %v, want retries (they are safe)", js.BackoffLimit)
	}
	if d := js.ActiveDeadlineSeconds; d == nil || *d <= 0 || *d >= 24*3600 {
		t.Errorf("activeDeadlineSeconds = %v", d)
	}
	checkFailurePolicy(t, js.PodFailurePolicy)
	if indexed {
		if js.CompletionMode == nil || *js.CompletionMode != batchv1.IndexedCompletion {
			t.Errorf("completionMode = %v, want Indexed", js.CompletionMode)
		}
		if js.Completions == nil || *js.Completions != 4 || js.Parallelism == nil || *js.Parallelism != 4 {
			t.Errorf("completions = %v, parallelism = %v, want 4 and 4", js.Completions, js.Parallelism)
		}
		if js.BackoffLimitPerIndex == nil || *js.BackoffLimitPerIndex < 1 {
			t.Errorf("backoffLimitPerIndex = %v", js.BackoffLimitPerIndex)
		}
	} else if js.CompletionMode != nil && *js.CompletionMode == batchv1.IndexedCompletion {
		t.Errorf("completionMode = Indexed in the unsharded job")
	}

	pod := js.Template.Spec
	// A stopped pass exits within its shutdown grace, the quarantine count
	// and cmd/scan's 10s metrics push; the kubelet must wait longer, with
	// room to spare.
	exit := scan.DefaultShutdownGrace + scan.ShutdownQuarantineTimeout + 10*time.Second
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < exit+15*time.Second {
		t.Errorf("terminationGracePeriodSeconds = %v, want at least %v (a stopped pass takes up to %v)", g, (exit + 15*time.Second).Seconds(), exit)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q", pod.RestartPolicy)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken should be false")
	}
	psc := pod.SecurityContext
	if psc == nil || !isTrue(psc.RunAsNonRoot) || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext = %+v", psc)
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	if v := volumes["tmp"]; v.EmptyDir == nil {
		t.Errorf("no emptyDir volume named tmp")
	}
	if v := volumes["config"]; v.ConfigMap == nil || v.ConfigMap.Name != "scan-policy" {
		t.Errorf("volume config = %+v, want the scan-policy ConfigMap", v)
	}

	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "migrate" {
		t.Fatalf("initContainers = %d, want one named migrate", len(pod.InitContainers))
	}
	migrate := pod.InitContainers[0]
	if !slices.Equal(migrate.Args, []string{"migrate"}) {
		t.Errorf("migrate args = %q", migrate.Args)
	}
	checkContainer(t, migrate)
	checkSecretEnv(t, migrate, "DATABASE_URL", "database-url")

	if len(pod.Containers) != 1 || pod.Containers[0].Name != "scan" {
		t.Fatalf("containers = %d, want one named scan", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args = %q, want %q", c.Args, wantArgs)
	}
	if migrate.Image != c.Image || c.Image == "" {
		t.Errorf("images %q and %q should be the same", migrate.Image, c.Image)
	}
	checkContainer(t, c)
	checkSecretEnv(t, c, "DATABASE_URL", "database-url")
	checkSecretEnv(t, c, "NOTICE_KEY_SECRET", "notice-key-secret")
	checkSecretEnv(t, c, "SMTP_URL", "smtp-url")
	for name, want := range map[string]string{
		"SCAN_ENVIRONMENT": "production",
		"SCAN_SENDER":      "smtp",
		"SCAN_CONFIG":      "/etc/scan/policy.yaml",
	} {
		if e := env(c, name); e == nil || e.Value != want || e.ValueFrom != nil {
			t.Errorf("env %s = %+v, want %q", name, e, want)
		}
	}
	// The pass's own budget ends it before Kubernetes does, with time to
	// send what it claimed and record it (a horizon, and the grace period
	// for good measure).
	if e := env(c, "SCAN_MAX_DURATION"); e == nil {
		t.Error("no SCAN_MAX_DURATION: a long catch-up pass would be killed at activeDeadlineSeconds")
	} else if d, err := time.ParseDuration(e.Value); err != nil || js.ActiveDeadlineSeconds == nil ||
		d <= 0 || d+5*time.Minute > time.Duration(*js.ActiveDeadlineSeconds)*time.Second {
		t.Errorf("SCAN_MAX_DURATION = %q (%v), want at least 5m below activeDeadlineSeconds %v", e.Value, err, js.ActiveDeadlineSeconds)
	}
	// scan derives the Go runtime's soft limit from the container's memory
	// limit, less the binary's own pages; a GOMEMLIMIT equal to the whole
	// limit would leave those pages no room and override it.
	if e := env(c, "GOMEMLIMIT"); e != nil {
		t.Errorf("env GOMEMLIMIT = %+v: scan sets it from limits.memory less the binary's pages", e)
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Error("no limits.memory: scan derives the Go runtime's memory limit from it")
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	if m := mounts["config"]; m.MountPath != "/etc/scan" || !m.ReadOnly {
		t.Errorf("config mount = %+v, want /etc/scan read-only", m)
	}
	if m := mounts["tmp"]; m.MountPath != "/tmp" {
		t.Errorf("tmp mount = %+v", m)
	}
}

// checkFailurePolicy: exit codes 2 (usage) and 3 (--max-mint) fail the Job
// instead of being retried.
func checkFailurePolicy(t *testing.T, p *batchv1.PodFailurePolicy) {
	t.Helper()
	if p == nil {
		t.Error("no podFailurePolicy")
		return
	}
	for _, r := range p.Rules {
		if r.Action == batchv1.PodFailurePolicyActionFailJob && r.OnExitCodes != nil &&
			r.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn &&
			slices.Contains(r.OnExitCodes.Values, 2) && slices.Contains(r.OnExitCodes.Values, 3) {
			return
		}
	}
	t.Errorf("podFailurePolicy has no FailJob rule for exit codes 2 and 3: %+v", p.Rules)
}

func checkContainer(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Errorf("%s: no securityContext", c.Name)
		return
	}
	if !isTrue(sc.RunAsNonRoot) || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("%s: runAsNonRoot/runAsUser = %v/%v", c.Name, sc.RunAsNonRoot, sc.RunAsUser)
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		t.Errorf("%s: readOnlyRootFilesystem not true", c.Name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation not false", c.Name)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("%s: capabilities = %+v, want drop ALL", c.Name, sc.Capabilities)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: seccompProfile = %+v", c.Name, sc.SeccompProfile)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[res]
		lim, okLim := c.Resources.Limits[res]
		if !okReq || !okLim || req.Cmp(lim) > 0 || req.Cmp(resource.Quantity{}) <= 0 {
			t.Errorf("%s: %s request %v, limit %v", c.Name, res, req.String(), lim.String())
		}
	}
	for _, m := range c.VolumeMounts {
		if m.Name == "tmp" && m.MountPath == "/tmp" {
			return
		}
	}
	t.Errorf("%s: /tmp is not an emptyDir mount", c.Name)
}

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func checkSecretEnv(t *testing.T, c corev1.Container, name, key string) {
	t.Helper()
	e := env(c, name)
	if e == nil || e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
		e.ValueFrom.SecretKeyRef.Name != "scan" || e.ValueFrom.SecretKeyRef.Key != key {
		t.Errorf("%s: env %s = %+v, want secretKeyRef scan/%s", c.Name, name, e, key)
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// The CronJobs fire on the schedule the policy was validated against, and the
// sample policy is valid.
func TestScheduleMatchesPolicy(t *testing.T) {
	docs := load(t)
	var cm *corev1.ConfigMap
	for _, d := range docs {
		if c, ok := d.obj.(*corev1.ConfigMap); ok && c.Name == "scan-policy" {
			cm = c
		}
	}
	if cm == nil {
		t.Fatal("no ConfigMap scan-policy")
	}
	text, ok := cm.Data["policy.yaml"]
	if !ok {
		t.Fatal("ConfigMap scan-policy has no policy.yaml")
	}
	p, err := policy.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the sample policy is refused: %v", err)
	}
	for file, cj := range cronJobs(t, docs) {
		if file == "cronjob-reconcile.yaml" || file == "cronjob-reconcile-sqs.yaml" || file == "cronjob-undelivered.yaml" || file == "cronjob-proof-verify.yaml" {
			continue // not a pass: it runs on its own schedule
		}
		if cj.Spec.Schedule != p.Schedule {
			t.Errorf("%s: schedule %q, policy schedule %q", file, cj.Spec.Schedule, p.Schedule)
		}
	}
}

// The reconcile CronJob reads the provider's events into an emptyDir and
// settles them with a format scan knows, under the same restrictions as the
// pass, with only the database secret.
func TestReconcileCronJob(t *testing.T) {
	cj := cronJobs(t, load(t))["cronjob-reconcile.yaml"]
	if cj == nil {
		t.Fatal("cronjob-reconcile.yaml has no CronJob")
	}
	if _, err := policy.ParseSchedule(cj.Spec.Schedule); err != nil {
		t.Errorf("schedule %q: %v", cj.Spec.Schedule, err)
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != "Etc/UTC" {
		t.Errorf("concurrencyPolicy %q, timeZone %v", cj.Spec.ConcurrencyPolicy, cj.Spec.TimeZone)
	}
	js := cj.Spec.JobTemplate.Spec
	checkFailurePolicy(t, js.PodFailurePolicy)
	if d := js.ActiveDeadlineSeconds; d == nil || *d <= 0 || *d > 3600 {
		t.Errorf("activeDeadlineSeconds = %v, want at most the hour between two runs", d)
	}
	pod := js.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("restartPolicy %q, automountServiceAccountToken %v", pod.RestartPolicy, pod.AutomountServiceAccountToken)
	}
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatalf("%d init containers, %d containers; want 1 and 1", len(pod.InitContainers), len(pod.Containers))
	}
	fetch, c := pod.InitContainers[0], pod.Containers[0]
	checkContainer(t, fetch)
	checkContainer(t, c)
	checkSecretEnv(t, c, "DATABASE_URL", "database-url")
	for _, name := range []string{"NOTICE_KEY_SECRET", "SMTP_URL", "SCAN_SENDER"} {
		if env(c, name) != nil {
			t.Errorf("reconcile gets %s, which it does not need", name)
		}
	}
	if len(c.Args) < 5 || c.Args[0] != "reconcile" {
		t.Fatalf("args = %q", c.Args)
	}
	var format, events string
	for i := 1; i+1 < len(c.Args); i++ {
		switch c.Args[i] {
		case "--format":
			format = c.Args[i+1]
		case "--events":
			events = c.Args[i+1]
		}
	}
	if !slices.Contains([]string{"jsonl", "ses", "sendgrid", "mailgun", "postmark"}, format) {
		t.Errorf("--format %q", format)
	}
	mountOf := func(c corev1.Container, name string) corev1.VolumeMount {
		for _, m := range c.VolumeMounts {
			if m.Name == name {
				return m
			}
		}
		return corev1.VolumeMount{}
	}
	in, out := mountOf(fetch, "events"), mountOf(c, "events")
	if in.MountPath == "" || in.ReadOnly || out.MountPath != in.MountPath || !out.ReadOnly || !strings.HasPrefix(events, out.MountPath+"/") {
		t.Errorf("events: written at %+v, read at %+v, file %q", in, out, events)
	}
	if !strings.Contains(strings.Join(fetch.Args, " "), events) {
		t.Errorf("the init container does not write %s", events)
	}
	for _, v := range pod.Volumes {
		if v.Name == "events" && (v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil) {
			t.Errorf("events volume %+v, want a bounded emptyDir", v)
		}
	}
}

// The SQS drain runs every 5 minutes, one at a time, and each drain's
// budget (--max-duration) and its last batch fit in the Job's deadline,
// which ends before the next drain is due; it is hardened like the pass
// and gets only the database secret (the queue through IRSA).
func TestReconcileSQSCronJob(t *testing.T) {
	cj := cronJobs(t, load(t))["cronjob-reconcile-sqs.yaml"]
	if cj == nil {
		t.Fatal("cronjob-reconcile-sqs.yaml has no CronJob")
	}
	sched, err := policy.ParseSchedule(cj.Spec.Schedule)
	if err != nil {
		t.Fatalf("schedule %q: %v", cj.Spec.Schedule, err)
	}
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if next := sched.Next(from); next.Sub(from) != 5*time.Minute || sched.Next(next).Sub(next) != 5*time.Minute {
		t.Errorf("schedule %q does not fire every 5 minutes", cj.Spec.Schedule)
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != "Etc/UTC" {
		t.Errorf("concurrencyPolicy %q, timeZone %v", cj.Spec.ConcurrencyPolicy, cj.Spec.TimeZone)
	}
	if d := cj.Spec.StartingDeadlineSeconds; d == nil || *d <= 0 || *d >= 300 {
		t.Errorf("startingDeadlineSeconds = %v, want less than the 5 minutes between two drains", d)
	}
	js := cj.Spec.JobTemplate.Spec
	checkFailurePolicy(t, js.PodFailurePolicy)
	pod := js.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("restartPolicy %q, automountServiceAccountToken %v", pod.RestartPolicy, pod.AutomountServiceAccountToken)
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("%d containers, %d init containers; want 1 and 0", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]
	checkContainer(t, c)
	checkSecretEnv(t, c, "DATABASE_URL", "database-url")
	for _, name := range []string{"NOTICE_KEY_SECRET", "SMTP_URL", "SCAN_SENDER", "AWS_SECRET_ACCESS_KEY"} {
		if env(c, name) != nil {
			t.Errorf("the drain gets %s, which it does not need", name)
		}
	}
	args := map[string]string{}
	for i := 1; i+1 < len(c.Args); i += 2 {
		args[c.Args[i]] = c.Args[i+1]
	}
	if len(c.Args) == 0 || c.Args[0] != "reconcile" || args["--format"] != "ses" {
		t.Errorf("args = %q, want reconcile --sqs URL --format ses", c.Args)
	}
	queue := args["--sqs"]
	if v := strings.TrimSuffix(strings.TrimPrefix(queue, "$("), ")"); v != queue {
		if e := env(c, v); e != nil {
			queue = e.Value
		}
	}
	if !strings.HasPrefix(queue, "https://sqs.") {
		t.Errorf("--sqs %q, want an https SQS queue URL", args["--sqs"])
	}
	budget, err := time.ParseDuration(args["--max-duration"])
	if err != nil || budget <= 0 {
		t.Fatalf("--max-duration %q: %v", args["--max-duration"], err)
	}
	// The last receive may begin just before the budget ends and long-poll
	// up to 20s, then its batch is applied and deleted.
	d := js.ActiveDeadlineSeconds
	if d == nil || time.Duration(*d)*time.Second < budget+20*time.Second || *d >= 300 {
		t.Errorf("activeDeadlineSeconds = %v with --max-duration %v: want room for the budget and a last long poll, and less than 5 minutes", d, budget)
	}
}

// The undelivered CronJob runs `scan undelivered` once a day, after the
// pass, and pushes its counts: the alert ScanUndeliveredGrowing compares
// them with the day before, so without the push it could never fire. It
// reads the ledger only: the database secret and nothing else.
func TestUndeliveredCronJob(t *testing.T) {
	docs := load(t)
	cjs := cronJobs(t, docs)
	cj := cjs["cronjob-undelivered.yaml"]
	if cj == nil {
		t.Fatal("cronjob-undelivered.yaml has no CronJob")
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
		t.Errorf("schedule %q does not fire once a day (the alert compares with a day before)", cj.Spec.Schedule)
	}
	if !first.After(passAt) || first.Sub(passAt) >= 24*time.Hour {
		t.Errorf("undelivered at %s, the pass at %s: want it after the day's pass", first.Format("15:04"), passAt.Format("15:04"))
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != "Etc/UTC" {
		t.Errorf("concurrencyPolicy %q, timeZone %v", cj.Spec.ConcurrencyPolicy, cj.Spec.TimeZone)
	}
	js := cj.Spec.JobTemplate.Spec
	checkFailurePolicy(t, js.PodFailurePolicy)
	pod := js.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("restartPolicy %q, automountServiceAccountToken %v", pod.RestartPolicy, pod.AutomountServiceAccountToken)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	checkContainer(t, c)
	checkSecretEnv(t, c, "DATABASE_URL", "database-url")
	for _, name := range []string{"NOTICE_KEY_SECRET", "SMTP_URL", "SCAN_SENDER", "TWILIO_AUTH_TOKEN"} {
		if env(c, name) != nil {
			t.Errorf("undelivered gets %s, which it does not need", name)
		}
	}
	if gw := env(c, "PUSHGATEWAY_URL"); gw == nil || gw.Value == "" {
		t.Error("no PUSHGATEWAY_URL: the counts ScanUndeliveredGrowing reads would never be pushed")
	}
	if len(c.Args) < 3 || c.Args[0] != "undelivered" || !slices.Contains(c.Args, "--since") {
		t.Errorf("args = %q, want undelivered --since D", c.Args)
	}
}
