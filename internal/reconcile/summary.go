package reconcile

import (
	"scan/internal/ledger"
	"scan/internal/metrics"
)

// Summary is the JSON object `scan reconcile` ends with, for events of
// format. unknown_message_id keeps its name from the jsonl days: it
// counts events that match no notice by key, provider id or Message-ID
// (or name an attempt the notice never had), and kept_unknown those of
// them kept as the second witness (a claim later minted for their key is
// recorded sent from them, not sent); already_settled counts the events
// kept as evidence only (recorded and duplicate). events counts the
// usable events by kind; stale those of an earlier attempt, which changed
// nothing.
func (res Result) Summary(format string) map[string]any {
	events := map[string]int{}
	for _, k := range ledger.EventKinds {
		events[string(k)] = res.Events[k]
	}
	return map[string]any{
		"format": format, "lines": res.Lines, "payloads": res.Payloads, "settled": res.Settled,
		"unknown_message_id": res.Unknown, "kept_unknown": res.KeptUnknown, "already_settled": res.Unchanged,
		"malformed": res.Malformed, "oversized": res.Oversized, "irrelevant": res.Irrelevant,
		"overruled": res.Overruled, "duplicate": res.Duplicate, "stale": res.Stale, "events": events,
	}
}

// MetricCounts are res's counts as scan_reconcile_events_total takes them.
func (res Result) MetricCounts() []metrics.ReconcileCount {
	var counts []metrics.ReconcileCount
	for t, n := range res.Tally {
		counts = append(counts, metrics.ReconcileCount{Event: string(t.Event), Result: t.Result, N: n})
	}
	return counts
}

// MetricLabels are scan_reconcile_events_total's label values: the
// ledger's event kinds and what reconcile says each event did.
func MetricLabels() metrics.ReconcileLabels {
	events := make([]string, len(ledger.EventKinds))
	for i, k := range ledger.EventKinds {
		events[i] = string(k)
	}
	return metrics.ReconcileLabels{Events: events, Results: Results}
}
