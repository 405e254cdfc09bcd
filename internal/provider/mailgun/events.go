package mailgun

import (
	"encoding/json"
	"errors"
	"fmt"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/reconcile"
	"strings"
)

func Decode(payload []byte) (ledger.Settlement, error) {
	var body struct {
		Signature json.RawMessage `json:"signature"`
		EventData *struct {
			Event     string          `json:"event"`
			Severity  string          `json:"severity"`
			Reason    string          `json:"reason"`
			Timestamp json.RawMessage `json:"timestamp"`
			Message   struct {
				Headers struct {
					MessageID string `json:"message-id"`
				} `json:"headers"`
			} `json:"message"`
			// An object when the message carried X-Mailgun-Variables, []
			// when it carried none, a string when Mailgun could not read
			// them: read by userVariables, so none of these is malformed.
			UserVariables  json.RawMessage `json:"user-variables"`
			DeliveryStatus json.RawMessage `json:"delivery-status"`
		} `json:"event-data"`
	}
	if err := reconcile.Object(payload, &body); err != nil {
		return ledger.Settlement{}, err
	}
	e := body.EventData
	if e == nil {
		return ledger.Settlement{}, errors.New("no event-data")
	}
	if e.Event == "" {
		return ledger.Settlement{}, fmt.Errorf("%w (event-data.event)", reconcile.ErrNoEvent)
	}
	vars := userVariables(e.UserVariables)
	ds := mailgunStatus(e.DeliveryStatus)
	ev := ledger.Settlement{
		Key:       reconcile.FirstString(vars[notice.KeyField]),
		Attempt:   reconcile.AttemptNumber(vars[notice.AttemptField]),
		MessageID: e.Message.Headers.MessageID,
		Event:     reconcile.EventName(Name, e.Event),
		Kind:      ledger.KindOther,
		At:        reconcile.ParseTime(e.Timestamp),
		Detail: reconcile.Detail("severity", e.Severity, "reason", e.Reason, "code", ds.code(), "message", ds.Message,
			"description", ds.Description),
	}
	switch reconcile.Lower(e.Event) {
	case "accepted":
		ev.To, ev.Kind = ledger.Sent, ledger.KindAccepted
	case "delivered":
		ev.To, ev.Kind = ledger.Sent, ledger.KindDelivered
	case "opened", "clicked":
		ev.To, ev.Kind = ledger.Sent, ledger.KindEngagement
	case "complained":
		ev.To, ev.Kind = ledger.Sent, ledger.KindComplaint
	case "failed":
		ev.Event += "/" + reconcile.Lower(e.Severity)
		mailgunFailure(&ev, reconcile.Lower(e.Severity), reconcile.Lower(e.Reason), ds)
	case "rejected":
		ev.To, ev.Kind = ledger.Retry, ledger.KindNotSent
	}
	return ev, nil
}

// mailgunDeliveryStatus is a Mailgun event's delivery-status: the
// receiving server's SMTP code (Mailgun's own above 600, as 605 "Not
// delivering to previously bounced address"), its message, Mailgun's
// description, and for a permanent failure the bounce type.
type mailgunDeliveryStatus struct {
	Code        json.RawMessage `json:"code"`
	Message     string          `json:"message"`
	Description string          `json:"description"`
	BounceType  string          `json:"bounce-type"`
}

// mailgunStatus reads a delivery-status; absent, null or not an object
// (Mailgun posts [] on some events), it is empty, and a field of another
// type than documented is left empty.
func mailgunStatus(raw json.RawMessage) mailgunDeliveryStatus {
	var ds mailgunDeliveryStatus
	_ = json.Unmarshal(raw, &ds) // what it could not read stays empty
	return ds
}

// code is the SMTP code as text; "" when none (0, as on a failure before
// any delivery attempt).
func (ds mailgunDeliveryStatus) code() string {
	c := strings.Trim(string(ds.Code), `" `)
	if c == "0" || c == "null" {
		return ""
	}
	return c
}

// mailgunFailure classifies a Mailgun "failed" event by its severity:
//
//   - temporary: a delivery attempt failed and Mailgun tries again; the
//     message was accepted (sent, deferred).
//   - permanent: Mailgun gave up: a bounce (failed: hard, or soft once
//     its retries of a temporary failure ran out, reason "old"), a block
//     by the receiving provider ("espblock": blocked), or a suppression
//     ("suppress-bounce", ...: dropped before sending, and a resend would
//     be too: failed, dropped). All of them undeliverable.
//   - internal: a failure inside Mailgun; the message never left and
//     Mailgun does not retry it. Nothing suppresses the address, so a
//     resend can cure it: retry.
//
// Any other severity keeps the message accepted (sent), as temporary.
func mailgunFailure(ev *ledger.Settlement, severity, reason string, ds mailgunDeliveryStatus) {
	switch {
	case severity == "temporary" && reason == "old":
		// Mailgun's last retry ("Too old", 8 hours on): it drops the
		// message. Its help centre says the event is permanent; users
		// report it tagged temporary. Final either way.
		ev.To, ev.Kind = ledger.Sent, ledger.KindBounceSoft
	case severity == "temporary":
		ev.To, ev.Kind = ledger.Sent, ledger.KindDeferred
	case severity == "internal":
		ev.To, ev.Kind = ledger.Retry, ledger.KindNotSent
	case severity == "permanent":
		switch {
		case strings.HasPrefix(reason, "suppress-"):
			ev.Event += "/" + reason
			ev.To, ev.Kind = ledger.Failed, ledger.KindDropped // accepted, dropped before sending
		case reason == "espblock":
			// the receiving provider blocked it
			ev.To, ev.Kind = ledger.Failed, ledger.KindBlocked
		case reason == "old" || reconcile.Lower(ds.BounceType) == "soft":
			// Mailgun's retries of a temporary failure ran out: final
			ev.To, ev.Kind = ledger.Failed, ledger.KindBounceSoft
		default:
			ev.To, ev.Kind = ledger.Failed, ledger.KindBounceHard
		}
	default:
		ev.To = ledger.Sent // Mailgun accepted it
	}
}

// userVariables returns Mailgun's user-variables by name, or nil when raw
// is not an object: Mailgun posts [] for a message without variables, and
// a string when it could not read them.
func userVariables(raw json.RawMessage) map[string]json.RawMessage {
	var vars map[string]json.RawMessage
	if json.Unmarshal(raw, &vars) != nil {
		return nil
	}
	return vars
}
