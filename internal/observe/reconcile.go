package observe

import (
	"context"

	"scan/internal/metrics"
	"scan/internal/reconcile"
)

// PushReconcile pushes what a reconcile of events of format applied
// (scan_reconcile_events_total) to the Pushgateway at url; "" pushes
// nothing. Like a pass's push, it runs within PushTimeout even when ctx
// was cancelled (SIGTERM), for the events were applied.
func PushReconcile(ctx context.Context, url, format string, res reconcile.Result) error {
	if url == "" {
		return nil
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PushTimeout)
	defer cancel()
	return metrics.PushReconcile(pctx, url, nil, format, reconcile.MetricLabels(), res.MetricCounts())
}
