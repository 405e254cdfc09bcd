package metrics

import (
	"context"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// UndeliveredJob is the Pushgateway job name of `scan undelivered`'s push.
const UndeliveredJob = "scan_undelivered"

// PushUndelivered pushes the counts of one `scan undelivered` run, by
// reason, each of reasons (the label's values, the caller's vocabulary:
// ledger.UndeliveredReasons) pushed, zeros included, as the gauge scan_undelivered_notices{reason} to the
// Pushgateway at gatewayURL, replacing the group of job
// "scan_undelivered". The alert ScanUndeliveredGrowing compares it with
// the day before. client nil is a 10s-timeout client. The error never
// contains the URL's password.
func PushUndelivered(ctx context.Context, gatewayURL string, client *http.Client, reasons []string, byReason map[string]int) error {
	u, client, err := pushTarget(gatewayURL, client)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scan_undelivered_notices",
		Help: "Notices that reached the customer by no channel, as the last `scan undelivered` run listed them (its --since), by reason (" + strings.Join(reasons, ", ") + ").",
	}, []string{"reason"})
	reg.MustRegister(g)
	for _, r := range reasons {
		g.WithLabelValues(r).Set(float64(byReason[r]))
	}
	err = push.New(gatewayURL, UndeliveredJob).Gatherer(reg).Client(client).PushContext(ctx)
	return pushError(u, err)
}
