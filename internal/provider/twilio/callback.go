package twilio

import (
	"errors"
	"net/url"
	"strconv"
	"strings"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/provider"
)

// ErrNotNotice: a status callback whose URL carries no notice key (not a
// message scan sent, or a callback URL changed by hand).
var ErrNotNotice = errors.New("twilio: callback names no notice key")

// DecodeCallback turns one verified status callback into a settlement of
// the notice whose key and attempt its URL's query carries (query: the
// callback URL's parameters; form: the POST body). Twilio posts
// MessageSid, MessageStatus and, for failed and undelivered, ErrorCode
// ("Track the Message status of outbound messages",
// https://www.twilio.com/docs/messaging/guides/track-outbound-message-status;
// the statuses: https://www.twilio.com/docs/messaging/api/message-resource#message-status-values):
//   - queued, accepted, scheduled, sending, sent: accepted (sent);
//   - delivered: delivered; read: engagement (sent);
//   - undelivered or failed with 21610 (the recipient replied STOP): not
//     sent, failed (and the number is suppressed, by ledger.Settle);
//   - undelivered or failed with a code that says the number takes no SMS
//     (30005, 30006, 21211, 21614, 21635): a hard bounce, failed (the
//     number is suppressed);
//   - any other undelivered: a soft bounce, failed (Twilio does not retry
//     it, the customer did not get it);
//   - any other failed, and canceled: not sent, retry (Twilio never sent
//     it: a queue overflow, the account's limits).
//
// Its second result is false for a status it does not know (nothing to
// apply). The settlement's Detail holds the status and error code, never
// a number.
func DecodeCallback(query, form url.Values) (ledger.Settlement, bool, error) {
	key := query.Get(KeyParam)
	if !notice.ValidKey(key) {
		return ledger.Settlement{}, false, ErrNotNotice
	}
	attempt, _ := strconv.Atoi(query.Get(AttemptParam))
	status := strings.ToLower(form.Get("MessageStatus"))
	if status == "" {
		status = strings.ToLower(form.Get("SmsStatus"))
	}
	code, _ := strconv.Atoi(form.Get("ErrorCode"))
	s := ledger.Settlement{Key: key, ProviderID: form.Get("MessageSid"), Attempt: max(attempt, 0), Event: string(provider.Twilio) + "/" + status}
	if code != 0 {
		s.Event += "/" + strconv.Itoa(code)
		s.Detail = "ErrorCode " + strconv.Itoa(code)
		if msg, ok := permanent[code]; ok {
			s.Detail += ": " + msg
		} else if msg, ok := hardUndelivered[code]; ok {
			s.Detail += ": " + msg
		}
	}
	_, hard := hardUndelivered[code]
	switch {
	case status == "queued" || status == "accepted" || status == "scheduled" || status == "sending" || status == "sent":
		s.To, s.Kind = ledger.Sent, ledger.KindAccepted
	case status == "delivered":
		s.To, s.Kind = ledger.Sent, ledger.KindDelivered
	case status == "read":
		s.To, s.Kind = ledger.Sent, ledger.KindEngagement
	case (status == "undelivered" || status == "failed") && code == Unsubscribed:
		s.To, s.Kind = ledger.Failed, ledger.KindNotSent
	case (status == "undelivered" || status == "failed") && hard:
		s.To, s.Kind = ledger.Failed, ledger.KindBounceHard
	case status == "undelivered":
		s.To, s.Kind = ledger.Failed, ledger.KindBounceSoft
	case status == "failed" || status == "canceled":
		s.To, s.Kind = ledger.Retry, ledger.KindNotSent
	default:
		return ledger.Settlement{}, false, nil
	}
	return s, true, nil
}
