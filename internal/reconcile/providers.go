package reconcile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// Formats are the event formats ReadFormat reads.
var Formats = []string{"jsonl", "ses", "sendgrid", "mailgun", "postmark"}

// NoticeKeyField is where every provider echoes the notice key: an SES
// message tag, a SendGrid unique argument, a Mailgun user variable, a
// Postmark metadata field (the headers send.CorrelationHeaders writes).
const NoticeKeyField = "notice_key"

// errNoEvent is a payload with no event type.
var errNoEvent = errors.New("no event type")

// evidence is what one provider payload says about one message.
type evidence struct {
	key, providerID, messageID string
	attempt                    int          // echoed beside the key (AttemptField); 0 when absent
	event                      string       // "format:type[/detail]", lower-case
	to                         ledger.State // "" when the event proves nothing
	at                         time.Time
}

// decoder reads one payload of a provider's format.
type decoder func(payload []byte) (evidence, error)

var decoders = map[string]decoder{
	"ses":      decodeSES,
	"sendgrid": decodeSendGrid,
	"mailgun":  decodeMailgun,
	"postmark": decodePostmark,
}

// ReadFormat calls fn with each usable settlement in r, read as format
// (one of Formats; "" is jsonl). jsonl is Read. The provider formats take
// the payloads as the provider posts them, one per line, several on a
// line, pretty-printed over many lines, or as the elements of a JSON
// array; Stats.Payloads counts them and Stats.Lines the lines of r.
// Malformed, oversized and irrelevant payloads are counted (problems with
// the line their payload starts on), never fatal; only a read error or an
// error from fn stops it. Each settlement names its claim by notice key,
// provider id or Message-ID (at least one). Memory stays bounded by
// MaxLine whatever the size of r.
//
// What each provider's events prove (everything else is irrelevant):
//
//   - ses (an SNS notification whose Message is the event, or the event
//     itself as Firehose or SQS deliver it; eventType or notificationType):
//     Send, Delivery, DeliveryDelay, Complaint, Open, Click and a
//     Transient or Undetermined Bounce: sent. A Permanent Bounce: failed.
//     Reject (SES refused it, nothing left): retry.
//   - sendgrid (event objects, usually in a JSON array): processed,
//     delivered, deferred, open, click, spamreport and a "blocked" bounce:
//     sent. A bounce of type "bounce": failed. dropped (never sent): retry.
//   - mailgun (webhook bodies {"signature":..., "event-data":...}):
//     accepted, delivered, opened, clicked, complained and a temporary
//     failure: sent. A permanent failure: failed, unless its reason is a
//     suppression (suppress-bounce, ...: Mailgun dropped it before sending):
//     retry. rejected: retry.
//   - postmark (one webhook object per event, by RecordType): Delivery,
//     Open, Click, SpamComplaint and any Bounce but a hard one: sent. A
//     Bounce of Type HardBounce or BadEmailAddress: failed.
func ReadFormat(r io.Reader, format string, fn func(ledger.Settlement) error) (Stats, error) {
	if format == "" || format == "jsonl" {
		st, err := Read(r, fn)
		st.Payloads = st.Lines
		return st, err
	}
	dec, ok := decoders[format]
	if !ok {
		return Stats{}, fmt.Errorf("reconcile: unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
	}
	var st Stats
	lines, err := split(r, func(line int, payload []byte, problem string, oversized bool) error {
		st.Payloads++
		switch {
		case oversized:
			st.Oversized++
			st.problem(line, problem)
			return nil
		case problem != "":
			st.Malformed++
			st.problem(line, problem)
			return nil
		}
		ev, derr := dec(payload)
		if derr != nil {
			st.Malformed++
			st.problem(line, derr.Error())
			return nil
		}
		if ev.to == "" {
			st.Irrelevant++
			return nil
		}
		if ev.key != "" && !notice.ValidKey(ev.key) {
			ev.key = "" // not one of ours: match by the ids instead
		}
		ev.messageID = strings.Trim(ev.messageID, "<> \t\r\n")
		ev.providerID = strings.TrimSpace(ev.providerID)
		if ev.key == "" && ev.providerID == "" && ev.messageID == "" {
			st.Malformed++
			st.problem(line, "no notice_key, provider message id or Message-ID")
			return nil
		}
		return fn(ledger.Settlement{Key: ev.key, ProviderID: ev.providerID, MessageID: ev.messageID, To: ev.to, Event: ev.event, At: ev.at, Attempt: ev.attempt})
	})
	st.Lines = lines
	return st, err
}

func lower(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// object decodes payload as a JSON object into v.
func object(payload []byte, v any) error {
	if len(payload) == 0 || payload[0] != '{' {
		return errors.New("not a JSON object")
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return errors.New("not a JSON object")
	}
	return nil
}

// firstString returns the first string of a JSON value that is a string
// or an array of strings (SES tags are arrays).
func firstString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil && len(ss) > 0 {
		return ss[0]
	}
	return ""
}

// sesEvent is an SES event record (event publishing, or the older
// notifications with notificationType).
type sesEvent struct {
	EventType        string `json:"eventType"`
	NotificationType string `json:"notificationType"`
	Mail             struct {
		Timestamp     json.RawMessage            `json:"timestamp"`
		MessageID     string                     `json:"messageId"`
		Tags          map[string]json.RawMessage `json:"tags"`
		CommonHeaders struct {
			MessageID string `json:"messageId"`
		} `json:"commonHeaders"`
	} `json:"mail"`
	Bounce struct {
		BounceType string          `json:"bounceType"`
		Timestamp  json.RawMessage `json:"timestamp"`
	} `json:"bounce"`
	Delivery  struct{ Timestamp json.RawMessage } `json:"delivery"`
	Complaint struct{ Timestamp json.RawMessage } `json:"complaint"`
	Open      struct{ Timestamp json.RawMessage } `json:"open"`
	Click     struct{ Timestamp json.RawMessage } `json:"click"`
}

// snsEnvelope is an Amazon SNS notification: the SES event is the JSON
// string in Message.
type snsEnvelope struct {
	Type    string  `json:"Type"`
	Message *string `json:"Message"`
}

func decodeSES(payload []byte) (evidence, error) {
	var env snsEnvelope
	if err := object(payload, &env); err != nil {
		return evidence{}, err
	}
	if env.Type != "" && env.Message != nil {
		if env.Type != "Notification" {
			return evidence{event: "ses:sns/" + lower(env.Type)}, nil // subscription confirmations
		}
		payload = []byte(strings.TrimSpace(*env.Message))
		if len(payload) == 0 || payload[0] != '{' {
			return evidence{}, errors.New("SNS Message is not a JSON object")
		}
	}
	var e sesEvent
	if err := object(payload, &e); err != nil {
		return evidence{}, err
	}
	typ := e.EventType
	if typ == "" {
		typ = e.NotificationType
	}
	if typ == "" {
		return evidence{}, fmt.Errorf("%w (eventType)", errNoEvent)
	}
	ev := evidence{
		key:        firstString(e.Mail.Tags[NoticeKeyField]),
		attempt:    attemptNumber(e.Mail.Tags[AttemptField]),
		providerID: e.Mail.MessageID,
		messageID:  e.Mail.CommonHeaders.MessageID,
		event:      "ses:" + lower(typ),
		at:         parseTime(e.Mail.Timestamp),
	}
	switch lower(typ) {
	case "send", "deliverydelay":
		ev.to = ledger.Sent
	case "delivery":
		ev.to, ev.at = ledger.Sent, orTime(e.Delivery.Timestamp, ev.at)
	case "complaint":
		ev.to, ev.at = ledger.Sent, orTime(e.Complaint.Timestamp, ev.at)
	case "open":
		ev.to, ev.at = ledger.Sent, orTime(e.Open.Timestamp, ev.at)
	case "click":
		ev.to, ev.at = ledger.Sent, orTime(e.Click.Timestamp, ev.at)
	case "bounce":
		ev.event += "/" + lower(e.Bounce.BounceType)
		ev.to, ev.at = ledger.Sent, orTime(e.Bounce.Timestamp, ev.at)
		if lower(e.Bounce.BounceType) == "permanent" {
			ev.to = ledger.Failed
		}
	case "reject":
		ev.to = ledger.Retry
	}
	return ev, nil
}

func orTime(raw json.RawMessage, def time.Time) time.Time {
	if t := parseTime(raw); !t.IsZero() {
		return t
	}
	return def
}

func decodeSendGrid(payload []byte) (evidence, error) {
	var e struct {
		Event       string                     `json:"event"`
		Type        string                     `json:"type"`
		NoticeKey   json.RawMessage            `json:"notice_key"`
		Attempt     json.RawMessage            `json:"notice_attempt"`
		SGMessageID string                     `json:"sg_message_id"`
		SMTPID      string                     `json:"smtp-id"`
		Timestamp   json.RawMessage            `json:"timestamp"`
		UniqueArgs  map[string]json.RawMessage `json:"unique_args"`
	}
	if err := object(payload, &e); err != nil {
		return evidence{}, err
	}
	if e.Event == "" {
		return evidence{}, fmt.Errorf("%w (event)", errNoEvent)
	}
	key, attempt := firstString(e.NoticeKey), attemptNumber(e.Attempt)
	if key == "" {
		key = firstString(e.UniqueArgs[NoticeKeyField]) // older webhook versions nest them
		attempt = attemptNumber(e.UniqueArgs[AttemptField])
	}
	// sg_message_id is the X-Message-Id of the SMTP reply plus a suffix
	// naming the filter server: ".filter0001.16648.5515E0B88.0".
	prov, _, _ := strings.Cut(e.SGMessageID, ".filter")
	ev := evidence{key: key, attempt: attempt, providerID: prov, messageID: e.SMTPID, event: "sendgrid:" + lower(e.Event), at: parseTime(e.Timestamp)}
	switch lower(e.Event) {
	case "processed", "delivered", "deferred", "open", "click", "spamreport":
		ev.to = ledger.Sent
	case "bounce":
		ev.event += "/" + lower(e.Type)
		ev.to = ledger.Failed
		if lower(e.Type) == "blocked" {
			ev.to = ledger.Sent
		}
	case "dropped":
		ev.to = ledger.Retry
	}
	return ev, nil
}

func decodeMailgun(payload []byte) (evidence, error) {
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
			UserVariables map[string]json.RawMessage `json:"user-variables"`
		} `json:"event-data"`
	}
	if err := object(payload, &body); err != nil {
		return evidence{}, err
	}
	e := body.EventData
	if e == nil {
		return evidence{}, errors.New("no event-data")
	}
	if e.Event == "" {
		return evidence{}, fmt.Errorf("%w (event-data.event)", errNoEvent)
	}
	ev := evidence{
		key:       firstString(e.UserVariables[NoticeKeyField]),
		attempt:   attemptNumber(e.UserVariables[AttemptField]),
		messageID: e.Message.Headers.MessageID,
		event:     "mailgun:" + lower(e.Event),
		at:        parseTime(e.Timestamp),
	}
	switch lower(e.Event) {
	case "accepted", "delivered", "opened", "clicked", "complained":
		ev.to = ledger.Sent
	case "failed":
		ev.event += "/" + lower(e.Severity)
		switch {
		case lower(e.Severity) != "permanent":
			ev.to = ledger.Sent // Mailgun accepted it and tries again
		case strings.HasPrefix(lower(e.Reason), "suppress-"):
			ev.event += "/" + lower(e.Reason)
			ev.to = ledger.Retry // dropped before sending
		default:
			ev.to = ledger.Failed
		}
	case "rejected":
		ev.to = ledger.Retry
	}
	return ev, nil
}

func decodePostmark(payload []byte) (evidence, error) {
	var e struct {
		RecordType  string                     `json:"RecordType"`
		Type        string                     `json:"Type"`
		MessageID   string                     `json:"MessageID"`
		Metadata    map[string]json.RawMessage `json:"Metadata"`
		DeliveredAt json.RawMessage            `json:"DeliveredAt"`
		BouncedAt   json.RawMessage            `json:"BouncedAt"`
		ReceivedAt  json.RawMessage            `json:"ReceivedAt"`
	}
	if err := object(payload, &e); err != nil {
		return evidence{}, err
	}
	if e.RecordType == "" {
		return evidence{}, fmt.Errorf("%w (RecordType)", errNoEvent)
	}
	ev := evidence{key: firstString(e.Metadata[NoticeKeyField]), attempt: attemptNumber(e.Metadata[AttemptField]),
		providerID: e.MessageID, event: "postmark:" + lower(e.RecordType)}
	switch lower(e.RecordType) {
	case "delivery":
		ev.to, ev.at = ledger.Sent, parseTime(e.DeliveredAt)
	case "open", "click":
		ev.to, ev.at = ledger.Sent, parseTime(e.ReceivedAt)
	case "spamcomplaint":
		ev.to, ev.at = ledger.Sent, parseTime(e.BouncedAt)
	case "bounce":
		ev.event += "/" + lower(e.Type)
		ev.to, ev.at = ledger.Sent, parseTime(e.BouncedAt)
		if t := lower(e.Type); t == "hardbounce" || t == "bademailaddress" {
			ev.to = ledger.Failed
		}
	}
	return ev, nil
}
