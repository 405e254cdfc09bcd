package ledger

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// History is one notice as `scan lookup` shows it: its ledger row, the
// digest of the message its current attempt handed over, and the
// provider evidence kept for each attempt.
type History struct {
	Row
	PeriodStart   string     `json:"period_start"`
	MessageSHA256 string     `json:"message_sha256,omitempty"`
	Evidence      []Evidence `json:"evidence"` // never nil: [] when none was kept
}

// Lookup returns the history of every notice of one subscription (none:
// an empty list), in two statements (the rows, then their evidence).
func Lookup(ctx context.Context, db sqlx.QueryerContext, subscriptionID string) ([]History, error) {
	rows, err := BySubscription(ctx, db, subscriptionID)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.NoticeKey
	}
	ev, err := EvidenceOf(ctx, db, keys)
	if err != nil {
		return nil, err
	}
	hs := make([]History, len(rows))
	for i, r := range rows {
		hs[i] = History{Row: r, PeriodStart: r.Period(), MessageSHA256: r.Digest(), Evidence: ev[r.NoticeKey]}
		if hs[i].Evidence == nil {
			hs[i].Evidence = []Evidence{}
		}
	}
	return hs, nil
}
