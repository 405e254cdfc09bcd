package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// ProofVerifyJob is the Pushgateway job name of `scan proof --verify`'s
// push (the optional CronJob k8s/cronjob-proof-verify.yaml).
const ProofVerifyJob = "scan_proof_verify"

// ProofVerifyResults are the values of scan_proof_verify_notices' result
// label: rebuilt to the digest the ledger recorded at send time, rebuilt
// to something else (tampered or damaged evidence), and sent before
// messages were kept (nothing to rebuild).
var ProofVerifyResults = []string{"verified", "mismatched", "missing"}

// ProofVerifyCounts is what one `scan proof --verify` run found.
type ProofVerifyCounts struct {
	Verified, Mismatched, Missing int
}

// ProofVerifyRegistry returns the registry a completed `scan proof
// --verify` run pushes: scan_proof_verify_notices{result} (every result,
// zeros included, so that the mismatch alert always has its series) and
// scan_proof_verify_last_success_timestamp_seconds (end, the time the
// check completed, whatever it found). Exported for the alert tests.
func ProofVerifyRegistry(c ProofVerifyCounts, end time.Time) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scan_proof_verify_notices",
		Help: "Notices whose kept message the last `scan proof --verify` run rebuilt, by result (verified: hashes to the digest recorded at send time; mismatched: does not, the evidence is damaged or was changed; missing: sent before messages were kept).",
	}, []string{"result"})
	last := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "scan_proof_verify_last_success_timestamp_seconds",
		Help: "Unix time at which the last `scan proof --verify` run completed its check (whatever it found). A run that could not check pushes nothing.",
	})
	reg.MustRegister(g, last)
	for r, n := range map[string]int{"verified": c.Verified, "mismatched": c.Mismatched, "missing": c.Missing} {
		g.WithLabelValues(r).Set(float64(n))
	}
	last.Set(float64(end.UnixNano()) / 1e9)
	return reg
}

// PushProofVerify pushes a completed `scan proof --verify` run's counts
// (ProofVerifyRegistry) to the Pushgateway at gatewayURL, replacing the
// group of job "scan_proof_verify". Only a run that completed its check
// pushes: a failed one leaves the last success time as it was, which the
// alert ScanProofVerifyStale watches. client nil is a 10s-timeout client.
// The error never contains the URL's password.
func PushProofVerify(ctx context.Context, gatewayURL string, client *http.Client, c ProofVerifyCounts, end time.Time) error {
	u, client, err := pushTarget(gatewayURL, client)
	if err != nil {
		return err
	}
	err = push.New(gatewayURL, ProofVerifyJob).Gatherer(ProofVerifyRegistry(c, end)).Client(client).PushContext(ctx)
	return pushError(u, err)
}
