package subscription

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// subscriptionListAfterSMS: the email channel's reads of a kind that goes
// by sms first and then by email ([sms, email], issue 30). The active
// rows of one group (the group parameters, $7 false) with the window open
// (as subscriptionListOpen's $3, $4) whose sms row of kind $8 is failed
// (no usable number, on the suppression list, refused for good, or
// failed or undelivered by evidence) and that have no email row of kind
// $8 (notHandled: after the cursor $9, from the period $10), at most $11.
// An sms row that is sent, claimed (quarantine), retry or missed, or
// absent, is never read here: that notice is never mailed.
const subscriptionListAfterSMS = `SELECT {cols}
FROM {rel} s
WHERE ` + inGroup + `
  AND EXISTS (
        SELECT 1 FROM notice_ledger m
        WHERE m.subscription_id = s.id::text AND m.period_start = s.period_start::date
          AND m.revision = COALESCE(s.notice_revision, 0) AND m.kind = $8
          AND m.channel = 'sms' AND m.state = 'failed'
          AND ($10::date IS NULL OR m.period_start >= $10::date))
  AND ` + notHandled + `
ORDER BY s.id::text
LIMIT $11`

// ListAfterSMS returns a page of at most limit active rows of g, in id
// order after the cursor, whose anchor is in (lo, hi] (the window is open
// at now, as ListOpen's) and whose sms notice failed with no email notice
// yet (subscriptionListAfterSMS): the email notices of a kind with
// channels [sms, email]. from bounds the ledger's side, as ListOpen's.
func (s *Source) ListAfterSMS(ctx context.Context, db sqlx.QueryerContext, g Group, lo, hi time.Time, from *time.Time, after *string, limit int) ([]Row, error) {
	q, args, err := s.afterSMSQuery(g, lo, hi, from, after, limit)
	if err != nil {
		return nil, err
	}
	return page(ctx, db, q, args)
}

// afterSMSQuery is subscriptionListAfterSMS with its parameters, filled
// for g's anchor (on each call: the statement is read a page at a time,
// only for the kinds with channels [sms, email]).
func (s *Source) afterSMSQuery(g Group, lo, hi time.Time, from *time.Time, after *string, limit int) (string, []any, error) {
	if _, err := s.statements(g.Anchor); err != nil {
		return "", nil, err
	}
	q := fill(subscriptionListAfterSMS, s.rel, s.cols(), pq.QuoteIdentifier(g.Anchor))
	return q, s.group(g, lo, hi, false, g.Kind, textParam(after), dateParam(from), limit), nil
}
