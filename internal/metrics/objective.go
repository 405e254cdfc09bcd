package metrics

import "github.com/prometheus/client_golang/prometheus"

// ObjectiveCount is the delivery objective over one trailing period, as
// the pass counted it from the ledger at its end (ledger.Objective): the
// notices whose window closed within the period before the pass ended,
// and how many of them reached the customer before it closed.
type ObjectiveCount struct {
	Period                            string // "1h", "6h", "1d", "3d", "30d"
	Due, Reached, Delivered, Accepted int
}

// objective are the gauges of the delivery objective (issue 36 §6). The
// Pushgateway keeps the last pass's values: each is a count over a
// trailing period ending at that pass, which Prometheus divides (the
// recording rules of k8s/prometheusrule.yaml) into the error ratio of each
// period, and from that the burn rates the alerts compare.
type objective struct {
	due, reached, delivered, accepted *prometheus.GaugeVec
	confirms                          prometheus.Gauge
}

func newObjective() objective {
	vec := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"period"})
	}
	return objective{
		due: vec("scan_slo_notices_due",
			"Notices (every channel of one notice together) whose window closed within the trailing period before the last pass ended, whole ledger."),
		reached: vec("scan_slo_notices_reached",
			"Of scan_slo_notices_due, those that reached the customer before the window closed: delivered by some channel, or accepted by email when the email sender cannot report delivery (scan_slo_email_delivery_confirmed 0)."),
		delivered: vec("scan_slo_notices_delivered",
			"Of scan_slo_notices_due, those with a provider's delivered event, on some channel, before the window closed."),
		accepted: vec("scan_slo_notices_accepted",
			"Of scan_slo_notices_due, those a sender accepted (state sent) before the window closed, confirmed or not."),
		confirms: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scan_slo_email_delivery_confirmed",
			Help: "1 when the pass's email sender reports delivery (policy provider set), so an email counts as reached only when delivered; 0 when acceptance is the best evidence there is (outbox, http, smtp with provider none).",
		}),
	}
}

func (o objective) collectors() []prometheus.Collector {
	return []prometheus.Collector{o.due, o.reached, o.delivered, o.accepted, o.confirms}
}

// set sets the gauges to cs; with cs nil (the pass could not count) the
// period gauges are left out of the push, so the alerts see no value
// rather than a zero.
func (o objective) set(cs []ObjectiveCount, confirms bool) {
	if confirms {
		o.confirms.Set(1)
	} else {
		o.confirms.Set(0)
	}
	for _, c := range cs {
		o.due.WithLabelValues(c.Period).Set(float64(c.Due))
		o.reached.WithLabelValues(c.Period).Set(float64(c.Reached))
		o.delivered.WithLabelValues(c.Period).Set(float64(c.Delivered))
		o.accepted.WithLabelValues(c.Period).Set(float64(c.Accepted))
	}
}
