package sendgrid

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
		Event       string                     `json:"event"`
		Type        string                     `json:"type"`
		NoticeKey   json.RawMessage            `json:"notice_key"`
		Attempt     json.RawMessage            `json:"notice_attempt"`
		SGMessageID string                     `json:"sg_message_id"`
		SMTPID      string                     `json:"smtp-id"`
		Timestamp   json.RawMessage            `json:"timestamp"`
		UniqueArgs  map[string]json.RawMessage `json:"unique_args"`
		// What SendGrid says of the Event: the receiving server's
		// response (delivered, deferred); the reason, the enhanced status
		// code, the bounce type and classification (bounce, dropped).
		Response       string `json:"response"`
		Reason         string `json:"reason"`
		Status         string `json:"status"`
		Classification string `json:"bounce_classification"`
	}
	if err := reconcile.Object(payload, &e); err != nil {
		return ledger.Settlement{}, err
	}
	if e.Event == "" {
		return ledger.Settlement{}, fmt.Errorf("%w (event)", reconcile.ErrNoEvent)
	}
	key, attempt := reconcile.FirstString(e.NoticeKey), reconcile.AttemptNumber(e.Attempt)
	if key == "" {
		key = reconcile.FirstString(e.UniqueArgs[notice.KeyField]) // older webhook versions nest them
		attempt = reconcile.AttemptNumber(e.UniqueArgs[notice.AttemptField])
	}
	// An asynchronous bounce (the receiving server took the message,
	// then bounced it) carries neither unique_args nor sg_message_id, only
	// smtp-id: our Message-ID, which matches it.
	ev := ledger.Settlement{Key: key, Attempt: attempt, ProviderID: sendGridMessageID(e.SGMessageID), MessageID: e.SMTPID,
		Event: reconcile.EventName(Name, e.Event), Kind: ledger.KindOther, At: reconcile.ParseTime(e.Timestamp),
		Detail: reconcile.Detail("type", e.Type, "classification", e.Classification, "status", e.Status, "reason", e.Reason, "response", e.Response)}
	switch reconcile.Lower(e.Event) {
	case "processed":
		ev.To, ev.Kind = ledger.Sent, ledger.KindAccepted
	case "delivered":
		ev.To, ev.Kind = ledger.Sent, ledger.KindDelivered
	case "deferred":
		ev.To, ev.Kind = ledger.Sent, ledger.KindDeferred
	case "open", "click":
		ev.To, ev.Kind = ledger.Sent, ledger.KindEngagement
	case "spamreport":
		ev.To, ev.Kind = ledger.Sent, ledger.KindComplaint
	case "bounce":
		// type "bounce" is a hard bounce, "blocked" a block: the
		// receiving server refused it (the sender's IP or content) and
		// SendGrid does not try again: undeliverable, the row stays sent
		// (accepted) and the kind's next channel takes it.
		ev.Event += "/" + reconcile.Lower(e.Type)
		ev.To, ev.Kind = ledger.Failed, ledger.KindBounceHard
		if reconcile.Lower(e.Type) == "blocked" {
			ev.To, ev.Kind = ledger.Sent, ledger.KindBlocked
		}
	case "dropped":
		// Dropped after SendGrid took the request, before sending; a
		// suppression (the reason names the list) is failed, any other
		// reason retry (notSent). Undeliverable either way.
		ev.To, ev.Kind = notSent(e.Reason), ledger.KindDropped
	}
	return ev, nil
}

// sendGridMessageID returns the X-Message-Id in an sg_message_id: the id
// SendGrid's reply names ("250 Ok: queued as <id>", stored as provider_id),
// which the sg_message_id contains, followed by a suffix naming the server
// that handled the message: ".recvd-5f54b5d587-pczjm-1-67BADEEA-6.0" on
// current ids, ".filter0001.16648.5515E0B88.0" on older ones. Current
// X-Message-Ids (22 characters of base64url) hold no dot, so the suffix
// starts at the first one; older ones did ("14c5d75ce93.dfd.64b469"), and
// their suffix starts at ".filter".
func sendGridMessageID(sg string) string {
	if i := strings.Index(sg, ".filter"); i >= 0 {
		return sg[:i]
	}
	id, _, _ := strings.Cut(sg, ".")
	return id
}

// notSent is the state a dropped event leads to, given SendGrid's reason:
// failed when the reason names one of SendGrid's suppression lists
// ("Bounced Address", "Unsubscribed Address", "Spam Reporting Address":
// the address is on the bounce, unsubscribe or spam report list;
// "Invalid": on the invalid emails list), since a resend would be dropped
// the same way until the address is taken off it; retry for every other
// reason ("Invalid SMTPAPI header", "Spam Content", ...), which is about
// the message and a fix on our side can cure.
func notSent(reason string) ledger.State {
	if suppressions[reconcile.Lower(reason)] {
		return ledger.Failed
	}
	return ledger.Retry
}

// suppressions are the dropped reasons, lower-cased, that name a
// suppression list (see notSent).
var suppressions = map[string]bool{"bounced address": true, "unsubscribed address": true, "spam reporting address": true, "invalid": true}
