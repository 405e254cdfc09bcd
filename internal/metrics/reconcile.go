package metrics

import (
	"context"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// ReconcileJob is the Pushgateway job name of `scan reconcile`'s push.
const ReconcileJob = "scan_reconcile"

// ReconcileLabels are the label values of scan_reconcile_events_total,
// the caller's vocabulary (as Config.Results is the pass's): every
// combination of one provider's run is pushed, zeros included, so that a
// ratio over them (the bounce-rate alert) never lacks a series.
type ReconcileLabels struct {
	Events  []string // the kinds of events (ledger.EventKinds)
	Results []string // what each did (reconcile.Results); the help text lists them
}

// ReconcileCount is how many events of one kind a reconcile run read and
// what they did.
type ReconcileCount struct {
	Event, Result string
	N             int
}

// PushReconcile pushes the counts of one `scan reconcile` run of provider,
// every combination of labels' values included,
// as scan_reconcile_events_total{provider,event,result} to the Pushgateway
// at gatewayURL, replacing the group job "scan_reconcile", provider (so
// that a run of one provider never removes another's counts). provider is
// the grouping label, which the Pushgateway puts on every series of the
// group (a client may not push a label that is also a grouping label). Like the
// pass's metrics, the values are the last run's: an hourly run that re-reads
// two days of events counts each event in every run that reads it; result
// "duplicate" marks those already kept. client nil is a 10s-timeout client.
// The error never contains the URL's password.
func PushReconcile(ctx context.Context, gatewayURL string, client *http.Client, provider string, labels ReconcileLabels, counts []ReconcileCount) error {
	u, client, err := pushTarget(gatewayURL, client)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	events := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scan_reconcile_events_total",
		Help: "Provider events read by the last `scan reconcile` run of a provider, by kind (event) and by what each did (result: " + strings.Join(labels.Results, ", ") + ").",
	}, []string{"event", "result"})
	reg.MustRegister(events)
	for _, ev := range labels.Events {
		for _, r := range labels.Results {
			events.WithLabelValues(ev, r)
		}
	}
	for _, c := range counts {
		events.WithLabelValues(c.Event, c.Result).Add(float64(c.N))
	}
	err = push.New(gatewayURL, ReconcileJob).Grouping("provider", provider).Gatherer(reg).Client(client).PushContext(ctx)
	return pushError(u, err)
}
