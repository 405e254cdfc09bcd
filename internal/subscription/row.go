package subscription

import (
	"strconv"
	"time"

	"scan/internal/address"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
)

// What a row makes: its notice's tuple, the claim and the notice a pass
// builds from it, and the anchor its window is measured from.

// TupleReason is why r cannot make an email notice's tuple, or "".
func (r Row) TupleReason() string {
	switch {
	case r.ID == "":
		return "empty subscription id"
	case len(r.ID) > notice.MaxSubscriptionIDLen:
		return "subscription id over 255 bytes"
	case r.RenewsAt == nil:
		return "renews_at is NULL"
	case r.PeriodStart == nil:
		return "period_start is NULL"
	case r.Revision < 0:
		return "notice_revision is negative"
	}
	return ""
}

// Anchor is the instant r's window is measured from: its kind's anchor,
// else renews_at (non-nil: TupleReason).
func (r Row) Anchor() time.Time {
	if r.AnchorAt != nil {
		return *r.AnchorAt
	}
	return *r.RenewsAt
}

// Claim is the claim of r's notice of kind: its tuple, and its window
// closing closeBefore ahead of anchor. The one constructor of a pass's
// claims from a row (its key, rule and zone are the caller's; a retry
// row's key is its ledger row's).
func (r Row) Claim(kind string, anchor time.Time, closeBefore time.Duration) ledger.Claim {
	return ledger.Claim{
		Tuple:    notice.Tuple{SubscriptionID: r.ID, PeriodStart: *r.PeriodStart, Kind: kind, Revision: r.Revision},
		RenewsAt: *r.RenewsAt, WindowClosesAt: anchor.Add(-closeBefore), Key: str(r.LedgerKey),
	}
}

// Notice is the notice named by t (its claim's tuple: Claim's) of r to
// the address to (domain: its bucket's). The one constructor of a pass's
// notices; its key and cancellation token are the claim's.
func (r Row) Notice(t notice.Tuple, anchor time.Time, to, domain string) notice.Notice {
	return notice.Notice{
		Tuple: t, RenewsAt: *r.RenewsAt, AnchorAt: anchor, To: to, Domain: domain, Name: str(r.Name), Plan: str(r.Plan),
	}
}

// Anchors are the anchor columns of the policy's kinds, in its order:
// what Open checks and fills the statements for.
func Anchors(pol *policy.Policy) []Anchor {
	out := make([]Anchor, 0, len(pol.Notices))
	for _, k := range pol.Notices {
		out = append(out, Anchor{Kind: k.Kind, Column: k.AnchorColumn()})
	}
	return out
}

// LogID is a subscription id as a log line may carry it: cut at 64
// bytes, and quoted when it holds a line break or control character
// (which must not forge a log line on a terminal; the JSON log escapes it
// anyway).
func LogID(id string) string {
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	if !address.ValidHeaderValue(id) {
		id = strconv.QuoteToASCII(id)
	}
	return id
}
