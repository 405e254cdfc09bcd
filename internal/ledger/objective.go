package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ObjectivePeriod is a trailing period the delivery objective is measured
// over, by its label value (the metric's period label) and its length.
type ObjectivePeriod struct {
	Name   string
	Length time.Duration
}

// ObjectivePeriods are the periods a pass measures: the windows of the
// burn-rate alerts (6h, 1d, 3d; k8s/prometheusrule.yaml) and the
// objective's own 30 days, and 1h for a dashboard.
var ObjectivePeriods = []ObjectivePeriod{
	{"1h", time.Hour}, {"6h", 6 * time.Hour}, {"1d", 24 * time.Hour},
	{"3d", 72 * time.Hour}, {"30d", 30 * 24 * time.Hour},
}

// ObjectiveCount is what Objective counts over one period: the notices
// whose window closed within it (Due) and, of those, the ones that reached
// the customer before it closed (Reached), the ones with evidence of
// delivery (Delivered) and the ones a sender accepted (Accepted). Reached
// is Delivered, plus the emails accepted when the email sender cannot
// report delivery (Objective's emailConfirms false).
type ObjectiveCount struct {
	Period    string `db:"period"`
	Due       int    `db:"due"`
	Reached   int    `db:"reached"`
	Delivered int    `db:"delivered"`
	Accepted  int    `db:"accepted"`
}

// Objective counts, for each of periods (ObjectivePeriods when nil), the
// notices whose window closed in the period before now, and how many of
// them reached the customer in time (noticeObjectiveByPeriod says what
// counts). emailConfirms is whether the email sender reports delivery
// (a provider correlation); when it does not, an accepted email counts as
// reached. One statement, over the whole ledger (every shard's notices).
func Objective(ctx context.Context, db sqlx.QueryerContext, now time.Time, emailConfirms bool, periods []ObjectivePeriod) ([]ObjectiveCount, error) {
	if periods == nil {
		periods = ObjectivePeriods
	}
	names := make([]string, len(periods))
	secs := make([]float64, len(periods))
	var longest float64
	for i, p := range periods {
		names[i], secs[i] = p.Name, p.Length.Seconds()
		longest = max(longest, secs[i])
	}
	var out []ObjectiveCount
	err := sqlx.SelectContext(ctx, db, &out, noticeObjectiveByPeriod,
		now.UTC(), pq.Array(names), pq.Array(secs), emailConfirms, longest)
	if err != nil {
		return nil, fmt.Errorf("delivery objective: %w", err)
	}
	return out, nil
}
