package ask

import "scan/internal/ledger"

// Summary is the JSON object `scan reconcile --ask` ends with: what it
// asked provider and what the answers did (already_settled counts the
// answers kept as evidence only; events the settlements by kind).
func (r Result) Summary(provider string) map[string]any {
	events := map[string]int{}
	for _, k := range ledger.EventKinds {
		events[string(k)] = r.Events[k]
	}
	return map[string]any{"ask": provider, "asked": r.Asked, "answered": r.Answered, "not_found": r.NotFound,
		"pending": r.Pending, "unknown": r.Unknown, "settled": r.Settled, "already_settled": r.Unchanged,
		"stale": r.Stale, "events": events}
}
