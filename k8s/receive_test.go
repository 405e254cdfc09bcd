package k8s_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// receiveObjects are the documents of receive.yaml, by kind.
type receiveObjects struct {
	dep *appsv1.Deployment
	svc *corev1.Service
	pdb *policyv1.PodDisruptionBudget
	np  *networkingv1.NetworkPolicy
	sm  *monitoringv1.ServiceMonitor
}

func loadReceive(t *testing.T) receiveObjects {
	t.Helper()
	var o receiveObjects
	for _, d := range load(t) {
		if d.file != "receive.yaml" {
			continue
		}
		switch v := d.obj.(type) {
		case *appsv1.Deployment:
			o.dep = v
		case *corev1.Service:
			o.svc = v
		case *policyv1.PodDisruptionBudget:
			o.pdb = v
		case *networkingv1.NetworkPolicy:
			o.np = v
		case *monitoringv1.ServiceMonitor:
			o.sm = v
		}
	}
	if o.dep == nil || o.svc == nil || o.pdb == nil || o.np == nil || o.sm == nil {
		t.Fatalf("receive.yaml lacks a Deployment, Service, PodDisruptionBudget, NetworkPolicy or ServiceMonitor: %+v", o)
	}
	return o
}

// selects reports whether sel selects the pods of the Deployment.
func selects(t *testing.T, sel *metav1.LabelSelector, dep *appsv1.Deployment) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return !s.Empty() && s.Matches(labels.Set(dep.Spec.Template.Labels))
}

// The receiver runs as two hardened replicas that a drain never takes
// down together, gets its secrets from the Secret, drains within the
// pod's grace period, and reaches only what it needs.
func TestReceiveDeployment(t *testing.T) {
	o := loadReceive(t)
	dep := o.dep
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", dep.Spec.Replicas)
	}
	if !selects(t, dep.Spec.Selector, dep) {
		t.Error("the Deployment's selector does not select its pods")
	}
	ps := dep.Spec.Template.Spec
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken not false")
	}
	if ps.SecurityContext == nil || !isTrue(ps.SecurityContext.RunAsNonRoot) {
		t.Error("pod securityContext: runAsNonRoot not true")
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(ps.Containers))
	}
	c := ps.Containers[0]
	checkContainer(t, c)
	if len(c.Args) == 0 || c.Args[0] != "receive" {
		t.Errorf("args = %v, want receive ...", c.Args)
	}
	grace := 25 * time.Second // scan receive's default
	if i := slices.Index(c.Args, "--grace"); i >= 0 && i+1 < len(c.Args) {
		d, err := time.ParseDuration(c.Args[i+1])
		if err != nil {
			t.Fatal(err)
		}
		grace = d
	}
	if ps.TerminationGracePeriodSeconds == nil || time.Duration(*ps.TerminationGracePeriodSeconds)*time.Second <= grace {
		t.Errorf("terminationGracePeriodSeconds %v is not above --grace %s", ps.TerminationGracePeriodSeconds, grace)
	}
	checkSecretEnv(t, c, "DATABASE_URL", "database-url")
	for name, key := range map[string]string{"SENDGRID_WEBHOOK_PUBLIC_KEY": "sendgrid-webhook-public-key", "MAILGUN_WEBHOOK_SIGNING_KEY": "mailgun-webhook-signing-key",
		"POSTMARK_WEBHOOK_USER": "postmark-webhook-user", "POSTMARK_WEBHOOK_PASSWORD": "postmark-webhook-password"} {
		checkSecretEnv(t, c, name, key)
	}
	if e := env(c, "SNS_TOPIC_ARNS"); e == nil || !strings.HasPrefix(e.Value, "arn:aws:sns:") {
		t.Errorf("SNS_TOPIC_ARNS = %+v", e)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readinessProbe = %+v, want GET /readyz", c.ReadinessProbe)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("livenessProbe = %+v, want GET /healthz", c.LivenessProbe)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 || c.Ports[0].Name != "http" {
		t.Errorf("ports = %+v, want http 8080", c.Ports)
	}

	if s, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: o.svc.Spec.Selector}); err != nil || s.Empty() || !s.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("the Service's selector %v does not select the pods", o.svc.Spec.Selector)
	}
	if len(o.svc.Spec.Ports) != 1 || o.svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports = %+v, want one to the http port", o.svc.Spec.Ports)
	}
	if !selects(t, o.pdb.Spec.Selector, dep) || o.pdb.Spec.MinAvailable == nil || o.pdb.Spec.MinAvailable.IntValue() < 1 ||
		o.pdb.Spec.MinAvailable.IntValue() >= int(*dep.Spec.Replicas) {
		t.Errorf("PodDisruptionBudget: selector %v, minAvailable %v; want the pods, 1 of 2", o.pdb.Spec.Selector, o.pdb.Spec.MinAvailable)
	}
	checkNetworkPolicy(t, o.np, dep)
	if s, err := metav1.LabelSelectorAsSelector(&o.sm.Spec.Selector); err != nil || s.Empty() || !s.Matches(labels.Set(o.svc.Labels)) {
		t.Errorf("the ServiceMonitor's selector %v does not select the Service", o.sm.Spec.Selector)
	}
	if len(o.sm.Spec.Endpoints) != 1 || o.sm.Spec.Endpoints[0].Path != "/metrics" || o.sm.Spec.Endpoints[0].Port != "http" {
		t.Errorf("ServiceMonitor endpoints = %+v, want /metrics on http", o.sm.Spec.Endpoints)
	}
}

// checkNetworkPolicy wants both directions restricted: in only on 8080,
// out only to DNS, PostgreSQL and HTTPS.
func checkNetworkPolicy(t *testing.T, np *networkingv1.NetworkPolicy, dep *appsv1.Deployment) {
	t.Helper()
	if !selects(t, &np.Spec.PodSelector, dep) {
		t.Error("the NetworkPolicy does not select the pods")
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Errorf("policyTypes = %v, want Ingress and Egress", np.Spec.PolicyTypes)
	}
	for _, r := range np.Spec.Ingress {
		if len(r.From) == 0 {
			t.Error("an ingress rule from anywhere")
		}
		for _, p := range r.Ports {
			if p.Port == nil || p.Port.IntValue() != 8080 {
				t.Errorf("ingress port %v, want 8080 only", p.Port)
			}
		}
	}
	allowed := map[int]bool{53: true, 5432: true, 443: true}
	for _, r := range np.Spec.Egress {
		if len(r.Ports) == 0 {
			t.Error("an egress rule to every port")
		}
		for _, p := range r.Ports {
			if p.Port == nil || !allowed[p.Port.IntValue()] {
				t.Errorf("egress port %v, want only 53, 5432 and 443", p.Port)
			}
		}
	}
}
