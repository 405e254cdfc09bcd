package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// The reasons Undelivered gives.
const (
	UndeliveredFailed     = "failed"            // the provider refused it for good
	UndeliveredBounced    = "bounced"           // a hard bounce (or complaint) by evidence
	UndeliveredSuppressed = "suppressed"        // the address was on the suppression list
	UndeliveredNoAddress  = "no_usable_address" // the row had no address the channel can use
	// UndeliveredInvalidAddress: a malformed email address, no other
	// channel left; listed while its window is open (the row waits in
	// retry), so support can fix the data in time.
	UndeliveredInvalidAddress = "invalid_address"
	UndeliveredMissed         = "missed"     // the window closed before any pass claimed it
	UndeliveredQuarantine     = "quarantine" // claimed, outcome unknown (scan reconcile, resolve)
	// Accepted, then undeliverable by the provider's evidence (issue 36):
	// the kind of that evidence.
	UndeliveredBounceSoft = "bounce_soft" // a soft bounce the provider reports as final
	UndeliveredBlocked    = "blocked"     // the receiving server blocked the sender or content
	UndeliveredDropped    = "dropped"     // the provider dropped it after accepting it
	// UndeliveredUnconfirmed: accepted, and no confirmation of delivery
	// before its window closed.
	UndeliveredUnconfirmed = "unconfirmed"
)

// UndeliveredReasons lists every reason Undelivered gives, in the order
// reports and the metric scan_undelivered_notices give them.
var UndeliveredReasons = []string{UndeliveredFailed, UndeliveredBounced, UndeliveredSuppressed,
	UndeliveredNoAddress, UndeliveredMissed, UndeliveredQuarantine, UndeliveredBounceSoft, UndeliveredBlocked,
	UndeliveredDropped, UndeliveredUnconfirmed, UndeliveredInvalidAddress}

// Unreached is one notice that reached the customer by no channel.
type Unreached struct {
	SubscriptionID string    `db:"subscription_id" json:"subscription_id"`
	Kind           string    `db:"kind" json:"kind"`
	PeriodStart    string    `db:"period_start" json:"period_start"`
	Revision       int       `db:"revision" json:"revision"`
	Channels       string    `db:"channels" json:"channels"` // the channels tried, comma-separated
	Reason         string    `db:"reason" json:"reason"`     // the last channel's (see the Undelivered* reasons)
	At             time.Time `db:"at" json:"at"`             // when the last of its rows changed
}

// Undelivered returns up to limit notices that reached the customer by
// no channel and whose rows last changed at or after since, oldest first.
// A row sent (accepted) counts as not reached when its delivery
// (DeliveryOf) is undeliverable, or unconfirmed with its window closed at
// now. It reads the whole ledger (a support report, not a pass's
// statement).
func Undelivered(ctx context.Context, db sqlx.QueryerContext, since, now time.Time, limit int) ([]Unreached, error) {
	var out []Unreached
	if err := sqlx.SelectContext(ctx, db, &out, noticeListUndelivered, since.UTC(), limit, now.UTC()); err != nil {
		return nil, fmt.Errorf("list undelivered: %w", err)
	}
	return out, nil
}
