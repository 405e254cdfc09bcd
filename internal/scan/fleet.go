package scan

import (
	"scan/internal/budget"
	"scan/internal/pace"
	"scan/internal/plan"
	"scan/internal/send"
)

// rates returns the buckets the pass paces its email sends by, and the
// fleet's budget beside them (issue 38): every pass on the ledger leases
// its send slots from the same rows (internal/budget), so the policy's
// rates bound the sum over shards, concurrent runs and catch-ups, and
// each pass keeps the whole policy locally, claiming by its pace. A pass
// without a rate limit at all has no budget and never leases.
func (p *Pass) rates() (pace.Limits, send.Budget) {
	l := p.cfg.Policy.Rate
	if l.Global.PerSecond == 0 && l.Default.PerSecond == 0 && !anyLimited(l.Domains) {
		return l, nil
	}
	return l, budget.New(p.db, l, plan.ClaimHorizon)
}

func anyLimited(domains map[string]pace.Bucket) bool {
	for _, b := range domains {
		if b.PerSecond > 0 {
			return true
		}
	}
	return false
}
