package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Delivery per notice (issue 36): state says what the pass knows (sent =
// the provider accepted it); delivery says what the provider's evidence
// says since. Settle keeps, per row, the kind of the deciding evidence of
// its current attempt (columns delivery_kind, delivery_attempt: sql/0030);
// DeliveryOf and DeliverySQL are the one rule that turns it into a
// notice's delivery, in Go and in SQL.

// DeliveryOf is a notice's delivery: the evidence of its current attempt
// when there is any (delivered or undeliverable, a hard bounce's failed
// row included), else unconfirmed while it is sent (accepted), else
// DeliveryNone (not sent: claimed, retry, refused, missed, cancelled).
func DeliveryOf(state State, evidence EventKind, evidenceAttempt, attempts int) Delivery {
	if d := evidence.Delivery(); d != DeliveryNone && evidenceAttempt == max(attempts, 1) {
		return d
	}
	if state == Sent {
		return DeliveryUnconfirmed
	}
	return DeliveryNone
}

// DeliverySQL is DeliveryOf as an SQL expression (noticeDeliveryOf) over
// the notice_ledger row aliased a (text: empty, 'delivered',
// 'undeliverable', 'unconfirmed'), for the statements that select or
// list by delivery.
func DeliverySQL(a string) string {
	return strings.ReplaceAll(noticeDeliveryOf, "n.", a+".")
}

// CarriedOnSQL is the rule by which an email row hands its notice to the
// kind's next channel at a later pass, as an SQL condition over the row
// aliased a: refused for good (failed), or undeliverable by evidence, or
// (when the kind has confirm_within, the interval parameter confirm, NULL
// for none) accepted, not confirmed delivered, and claimed at least that
// long before the parameter now. The claim's time is the pass's clock
// (--now included), so passes run with --now agree with it; the provider
// took the message within the pass's budget after it. A delivered notice
// never goes on.
func CarriedOnSQL(a, now, confirm string) string {
	d := DeliverySQL(a)
	return `(` + a + `.state = 'failed' OR ` + d + ` = 'undeliverable'
      OR (` + confirm + `::interval IS NOT NULL AND ` + a + `.state = 'sent' AND ` + d + ` = 'unconfirmed'
          AND ` + a + `.claimed_at <= ` + now + `::timestamptz - ` + confirm + `::interval))`
}

// CarriesOn is CarriedOnSQL in Go, for one row at now; confirm 0 is none.
func CarriesOn(r Row, now time.Time, confirm time.Duration) bool {
	d := r.DeliveryOf()
	if r.State == Failed || d == DeliveryUndeliverable {
		return true
	}
	if confirm <= 0 || d != DeliveryUnconfirmed {
		return false
	}
	return !r.ClaimedAt.After(now.Add(-confirm))
}

// DeliveryOf is the row's delivery (the package function DeliveryOf).
func (r Row) DeliveryOf() Delivery {
	return DeliveryOf(r.State, EventKind(r.DeliveryKind), r.DeliveryAttempt, r.Attempts)
}

// withDelivery fills each row's Delivery.
func withDelivery(rows []Row) []Row {
	for i := range rows {
		rows[i].Delivery = rows[i].DeliveryOf()
	}
	return rows
}

// deliveryBatch is the delivery evidence of a Settle batch, one kind per
// row: the latest attempt's; for one attempt the first undeliverable
// kind, over delivered (a receiving server may take a message, then
// bounce it).
type deliveryBatch struct {
	at    map[string]int
	keys  []string
	per   []time.Time
	atts  []int
	evids []string
}

// add keeps what an event of kind k says of attempt of row r.
func (b *deliveryBatch) add(r *settleRow, attempt int, k EventKind) {
	d := k.Delivery()
	if d == DeliveryNone || attempt <= 0 {
		return
	}
	if b.at == nil {
		b.at = map[string]int{}
	}
	i, ok := b.at[r.Key]
	if !ok {
		b.at[r.Key] = len(b.keys)
		b.keys, b.per, b.atts, b.evids = append(b.keys, r.Key), append(b.per, r.PeriodStart), append(b.atts, attempt), append(b.evids, string(k))
		return
	}
	if attempt > b.atts[i] || (attempt == b.atts[i] && d == DeliveryUndeliverable && b.evids[i] == string(KindDelivered)) {
		b.atts[i], b.evids[i] = attempt, string(k)
	}
}

// write records the batch (noticeUpdateDelivery), in Settle's transaction.
func (b *deliveryBatch) write(ctx context.Context, tx sqlx.ExecerContext) error {
	if len(b.keys) == 0 {
		return nil
	}
	days := make([]string, len(b.per))
	for i, t := range b.per {
		days[i] = t.Format(time.DateOnly)
	}
	if _, err := tx.ExecContext(ctx, noticeUpdateDelivery, pq.Array(b.keys), pq.Array(days), pq.Array(b.atts), pq.Array(b.evids)); err != nil {
		return fmt.Errorf("settle delivery: %w", err)
	}
	return nil
}
