package observe

import (
	"context"

	"scan/internal/ledger"
	"scan/internal/metrics"
)

// PushUndelivered pushes the count by reason of the notices that reached
// the customer by no channel (scan_undelivered_notices, which
// ScanUndeliveredGrowing watches) to the Pushgateway at url; "" pushes
// nothing.
func PushUndelivered(ctx context.Context, url string, list []ledger.Unreached) error {
	if url == "" {
		return nil
	}
	byReason := map[string]int{}
	for _, u := range list {
		byReason[u.Reason]++
	}
	return metrics.PushUndelivered(ctx, url, nil, ledger.UndeliveredReasons, byReason)
}
