package ledger

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"scan/internal/notice"
)

// Shadow mode (issue 27): `scan run --shadow` records the notices it would
// have claimed in notice_shadow, apart from the ledger, and `scan shadow
// report` compares them with what a legacy sender sent.

// Shadowed is one notice a shadow pass would have claimed, with its
// window as the pass measured it.
type Shadowed struct {
	Claim
	OpensAt  time.Time
	ClosesAt time.Time
}

// ShadowRecord records ss as would-be claims of run runID at now, once
// per notice: a notice an earlier shadow pass recorded keeps its row. It
// returns how many it recorded.
func ShadowRecord(ctx context.Context, db sqlx.ExtContext, runID string, now time.Time, ss []Shadowed) (int, error) {
	if len(ss) == 0 {
		return 0, nil
	}
	n := len(ss)
	cols := make([][]string, 10)
	for i := range cols {
		cols[i] = make([]string, n)
	}
	for i, s := range ss {
		for j, v := range []string{s.SubscriptionID, s.Kind, s.PeriodStart.Format(dateLayout), strconv.Itoa(s.Revision), s.Key,
			s.OpensAt.UTC().Format(tsLayout), s.ClosesAt.UTC().Format(tsLayout), s.RenewsAt.UTC().Format(tsLayout), s.Rule, s.TimeZone} {
			cols[j][i] = v
		}
	}
	args := make([]any, 0, 12)
	for _, c := range cols {
		args = append(args, pq.Array(c))
	}
	var got []string
	if err := sqlx.SelectContext(ctx, db, &got, shadowInsert, append(args, now.UTC(), runID)...); err != nil {
		return 0, fmt.Errorf("shadow record: %w", err)
	}
	return len(got), nil
}

// pruneShadow removes the shadow rows of periods before before (YYYY-MM-DD).
func pruneShadow(ctx context.Context, db sqlx.ExecerContext, before string) (int64, error) {
	r, err := db.ExecContext(ctx, shadowPrune, before)
	if err != nil {
		return 0, fmt.Errorf("prune: shadow: %w", err)
	}
	return r.RowsAffected()
}

// LegacySend is one send of a legacy sender (a line of the backfill's CSV).
type LegacySend struct {
	notice.Tuple
	SentAt time.Time
}

// ShadowReport is what the shadow passes would have sent against what a
// legacy sender sent.
type ShadowReport struct {
	LegacySends int `db:"legacy_sends" json:"legacy_sends"`
	// LegacyNotices counts the distinct notices among LegacySends.
	LegacyNotices int `db:"legacy_notices" json:"legacy_notices"`
	// Duplicates counts the notices the legacy sender sent more than once.
	Duplicates int `db:"duplicates" json:"duplicates"`
	// OutsideWindow counts the legacy sends made when no window of theirs
	// was open (before it opened or after it closed) or that no shadow
	// pass found due at all (the subscription was not active, or no
	// window of the policy held it).
	OutsideWindow int `db:"outside_window" json:"outside_window"`
	// MissedByLegacy counts the notices the shadow passes would have sent
	// that the legacy sender never sent.
	MissedByLegacy int `db:"missed_by_legacy" json:"missed_by_legacy"`
	// WouldSend counts the notices the shadow passes would have sent.
	WouldSend int `db:"would_send" json:"would_send"`
}

// ShadowCompare compares sends with the shadow rows, in one read-only
// transaction whose temporary table holds the sends.
func ShadowCompare(ctx context.Context, db *sqlx.DB, sends []LegacySend) (ShadowReport, error) {
	var rep ShadowReport
	err := WithTx(ctx, db, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, shadowLegacyCreate); err != nil {
			return err
		}
		for start := 0; start < len(sends); start += 5000 {
			chunk := sends[start:min(start+5000, len(sends))]
			subs, kinds, periods, revs, at := make([]string, len(chunk)), make([]string, len(chunk)), make([]string, len(chunk)), make([]string, len(chunk)), make([]string, len(chunk))
			for i, s := range chunk {
				subs[i], kinds[i], periods[i] = s.SubscriptionID, s.Kind, s.PeriodStart.Format(dateLayout)
				revs[i], at[i] = strconv.Itoa(s.Revision), s.SentAt.UTC().Format(tsLayout)
			}
			if _, err := tx.ExecContext(ctx, shadowLegacyInsert, pq.Array(subs), pq.Array(kinds), pq.Array(periods), pq.Array(revs), pq.Array(at)); err != nil {
				return err
			}
		}
		return sqlx.GetContext(ctx, tx, &rep, shadowReportCounts)
	})
	if err != nil {
		return rep, fmt.Errorf("shadow report: %w", err)
	}
	return rep, nil
}
