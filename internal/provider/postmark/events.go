package postmark

import (
	"encoding/json"
	"fmt"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/reconcile"
	"strings"
)

func Decode(payload []byte) (ledger.Settlement, error) {
	var e struct {
		RecordType  string                     `json:"RecordType"`
		Type        string                     `json:"Type"`
		MessageID   string                     `json:"MessageID"`
		Metadata    map[string]json.RawMessage `json:"Metadata"`
		DeliveredAt json.RawMessage            `json:"DeliveredAt"`
		BouncedAt   json.RawMessage            `json:"BouncedAt"`
		ReceivedAt  json.RawMessage            `json:"ReceivedAt"`
		// What Postmark says of the Event: the bounce type's code and the
		// receiving server's details (Bounce, SpamComplaint), the details
		// of a Delivery (the server's response).
		TypeCode json.RawMessage `json:"TypeCode"`
		Details  string          `json:"Details"`
	}
	if err := reconcile.Object(payload, &e); err != nil {
		return ledger.Settlement{}, err
	}
	if e.RecordType == "" {
		return ledger.Settlement{}, fmt.Errorf("%w (RecordType)", reconcile.ErrNoEvent)
	}
	ev := ledger.Settlement{Key: reconcile.FirstString(e.Metadata[notice.KeyField]), Attempt: reconcile.AttemptNumber(e.Metadata[notice.AttemptField]),
		ProviderID: e.MessageID, Event: reconcile.EventName(Name, e.RecordType), Kind: ledger.KindOther}
	switch reconcile.Lower(e.RecordType) {
	case "delivery":
		ev.To, ev.Kind, ev.At = ledger.Sent, ledger.KindDelivered, reconcile.ParseTime(e.DeliveredAt)
	case "open", "click":
		ev.To, ev.Kind, ev.At = ledger.Sent, ledger.KindEngagement, reconcile.ParseTime(e.ReceivedAt)
	case "spamcomplaint":
		ev.To, ev.Kind, ev.At = ledger.Sent, ledger.KindComplaint, reconcile.ParseTime(e.BouncedAt)
	case "bounce":
		ev.Event += "/" + reconcile.Lower(e.Type)
		ev.To, ev.Kind = postmarkBounce(reconcile.Lower(e.Type))
		ev.At = reconcile.ParseTime(e.BouncedAt)
	}
	if ev.To != "" {
		typ := e.Type
		if code := strings.Trim(string(e.TypeCode), `" `); typ != "" && code != "" && code != "null" {
			typ += " (" + code + ")"
		}
		ev.Detail = reconcile.Detail("type", typ, "details", e.Details)
	}
	return ev, nil
}

// postmarkBounce classifies a Postmark Bounce by its Type (Postmark's bounce
// types, lower-cased). SMTPApiError is Postmark's internal rejection of a
// message sent by SMTP to a recipient it suppresses (after a bounce, a spam
// complaint, an unsubscribe or by hand): nothing was sent, and a resend is
// rejected again while the suppression stands, so it is failed, not sent.
// Every other bounce but a hard one leaves the message sent: a
// SoftBounce or DNSError (Postmark reports it once it stops trying) is a
// final soft bounce, Blocked and DMARCPolicy (the receiving server refused
// the sender or its domain's policy) a block: undeliverable, so the kind's
// next channel takes the notice. Transient is a delay (deferred).
func postmarkBounce(typ string) (ledger.State, ledger.EventKind) {
	switch typ {
	case "hardbounce", "bademailaddress":
		return ledger.Failed, ledger.KindBounceHard
	case "smtpapierror":
		return ledger.Failed, ledger.KindNotSent
	case "transient":
		return ledger.Sent, ledger.KindDeferred
	case "softbounce", "dnserror":
		return ledger.Sent, ledger.KindBounceSoft
	case "blocked", "dmarcpolicy":
		return ledger.Sent, ledger.KindBlocked
	case "spamcomplaint":
		return ledger.Sent, ledger.KindComplaint
	}
	return ledger.Sent, ledger.KindOther // auto-replies, address changes, unknown types
}
