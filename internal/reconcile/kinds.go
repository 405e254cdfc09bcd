package reconcile

import (
	"strings"

	"scan/internal/ledger"
)

// kindOf names what a settlement's event says of its attempt
// (ledger.EventKind) when its reader named no kind (jsonl, whose event
// names are the operator's own), from the event name ("format:
// type[/detail]", or the bare name) and the state it proves:
//
//   - accepted: SES Send, SendGrid processed, Mailgun accepted, jsonl
//     accepted, sent or processed.
//   - delivered: SES Delivery, SendGrid and Mailgun delivered, Postmark
//     Delivery.
//   - deferred: SES DeliveryDelay, SendGrid deferred, a Mailgun failure
//     that is not permanent (Mailgun tries again).
//   - bounce_hard / bounce_soft: a bounce that proves failed / one that
//     does not (for the providers' own decoders: SES Transient or
//     Undetermined, Mailgun's retries run out, Postmark SoftBounce and
//     DnsError; their blocks are blocked, their drops after acceptance
//     dropped: ledger.EventKind.Delivery).
//   - complaint, engagement (open, click).
//   - not_sent: every event that proves retry (SES Reject, SendGrid
//     dropped, Mailgun rejected, a Mailgun suppress-* failure, Postmark
//     SMTPApiError), whatever its name.
func kindOf(event string, to ledger.State) ledger.EventKind {
	if to == ledger.Retry {
		return ledger.KindNotSent
	}
	name := event
	if _, rest, ok := strings.Cut(event, ":"); ok {
		name = rest
	}
	base, detail, _ := strings.Cut(name, "/")
	switch base {
	case "send", "processed", "accepted", "sent":
		return ledger.KindAccepted
	case "delivery", "delivered":
		return ledger.KindDelivered
	case "deliverydelay", "deferred":
		return ledger.KindDeferred
	case "complaint", "complained", "spamreport", "spamcomplaint":
		return ledger.KindComplaint
	case "open", "opened", "click", "clicked":
		return ledger.KindEngagement
	case "reject", "rejected", "dropped":
		return ledger.KindNotSent
	case "failed": // Mailgun: failed/<severity>[/<reason>]
		switch {
		case strings.Contains(detail, "suppress-"):
			return ledger.KindNotSent
		case to == ledger.Failed:
			return ledger.KindBounceHard
		}
		return ledger.KindDeferred
	case "bounce", "bounced":
		if to == ledger.Failed {
			return ledger.KindBounceHard
		}
		return ledger.KindBounceSoft
	}
	if to == ledger.Failed {
		return ledger.KindBounceHard
	}
	return ledger.KindOther
}

// classify completes a settlement read from format with its kind where the
// reader gave none (jsonl; each provider's decoder names its own, and
// decides a suppression itself).
func classify(s *ledger.Settlement) {
	if s.Kind == "" {
		s.Kind = kindOf(s.Event, s.To)
	}
}
