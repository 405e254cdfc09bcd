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
	"scan/internal/provider"
)

// FormatJSONL is the format of the ledger's own settlements, one JSON
// object a line (Read); every other format is an email provider's name.
const FormatJSONL = "jsonl"

// Formats are the event formats ReadFormat reads: jsonl, then each email
// provider's (provider.Email).
var Formats = append([]string{FormatJSONL}, provider.Strings(provider.Email...)...)

// errNoEvent is a payload with no event type.
var errNoEvent = errors.New("no event type")

// evidence is what one provider payload says about one message.
type evidence struct {
	key, providerID, messageID string
	attempt                    int              // echoed beside the key (notice.AttemptField); 0 when absent
	event                      string           // "format:type[/detail]", lower-case
	kind                       ledger.EventKind // what the event says happened (ledger.EventKinds); ledger.KindOther when it proves nothing
	to                         ledger.State     // "" when the event proves nothing
	at                         time.Time
	detail                     string // what the provider said of it (detail): kept with the evidence
}

// eventName is the evidence's event of a payload of type typ from p:
// "provider:type", lower-case.
func eventName(p provider.Name, typ string) string { return string(p) + ":" + lower(typ) }

// decoder reads one payload of a provider's format.
type decoder func(payload []byte) (evidence, error)

var decoders = map[string]decoder{
	string(provider.SES):      decodeSES,
	string(provider.SendGrid): decodeSendGrid,
	string(provider.Mailgun):  decodeMailgun,
	string(provider.Postmark): decodePostmark,
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
//     sent. A bounce of type "bounce": failed. dropped (never sent):
//     failed when its reason names a suppression list, else retry
//     (notSent).
//     sg_message_id is matched without its suffix (from ".recvd-..." or
//     ".filter..."); an asynchronous bounce, which carries neither the key
//     nor sg_message_id, by its smtp-id (our Message-ID).
//   - mailgun (webhook bodies {"signature":..., "event-data":...}):
//     accepted, delivered, opened, clicked, complained and a temporary
//     failure: sent. A permanent failure: failed (also when its reason is
//     a suppression, suppress-bounce, ...: Mailgun dropped it before
//     sending, and would again; notSent). A failure of severity internal (Mailgun never sent it and does
//     not retry): retry. rejected: retry. user-variables that are not an
//     object ([] for a message without variables) hold no key.
//   - postmark (one webhook object per event, by RecordType): Delivery,
//     Open, Click, SpamComplaint and any Bounce but those below: sent. A
//     Bounce of Type HardBounce or BadEmailAddress: failed; of Type
//     SMTPApiError (Postmark refused to send to a suppressed recipient):
//     failed.
//
// Each payload is also classified by kind (one of Kinds): what happened to
// the message, whatever the state it leads to; and its Detail holds what
// the provider said of it (responses, bounce types and codes, reasons;
// see the decoders), without any e-mail address (cleanDetail).
func ReadFormat(r io.Reader, format string, fn func(ledger.Settlement) error) (Stats, error) {
	if format == "" || format == FormatJSONL {
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
		ev.messageID = notice.BareMessageID(ev.messageID)
		ev.providerID = strings.TrimSpace(ev.providerID)
		if ev.key == "" && ev.providerID == "" && ev.messageID == "" {
			st.Malformed++
			st.problem(line, "no notice_key, provider message id or Message-ID")
			return nil
		}
		return fn(ledger.Settlement{Key: ev.key, ProviderID: ev.providerID, MessageID: ev.messageID, To: ev.to, Kind: ev.kind, Event: ev.event, At: ev.at, Attempt: ev.attempt, Detail: ev.detail})
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
		BounceType        string          `json:"bounceType"`
		BounceSubType     string          `json:"bounceSubType"`
		BouncedRecipients []sesRecipient  `json:"bouncedRecipients"`
		ReportingMTA      string          `json:"reportingMTA"`
		Timestamp         json.RawMessage `json:"timestamp"`
	} `json:"bounce"`
	Delivery struct {
		Timestamp    json.RawMessage `json:"timestamp"`
		SMTPResponse string          `json:"smtpResponse"`
		ReportingMTA string          `json:"reportingMTA"`
	} `json:"delivery"`
	DeliveryDelay struct {
		DelayType         string         `json:"delayType"`
		DelayedRecipients []sesRecipient `json:"delayedRecipients"`
	} `json:"deliveryDelay"`
	Complaint struct {
		Timestamp             json.RawMessage `json:"timestamp"`
		ComplaintFeedbackType string          `json:"complaintFeedbackType"`
	} `json:"complaint"`
	Reject struct {
		Reason string `json:"reason"`
	} `json:"reject"`
	Open  struct{ Timestamp json.RawMessage } `json:"open"`
	Click struct{ Timestamp json.RawMessage } `json:"click"`
}

// sesRecipient is one recipient of an SES bounce or delivery delay: the
// DSN status code and the receiving server's diagnostic (its
// emailAddress is never read).
type sesRecipient struct {
	Status         string `json:"status"`
	DiagnosticCode string `json:"diagnosticCode"`
}

// sesDetail is what an SES event says of its message, by the fields SES
// documents for it: the receiving server's response and the MTA for a
// Delivery, the bounce type, subtype, each recipient's status and
// diagnostic and the reporting MTA for a Bounce, the delay type and
// diagnostic for a DeliveryDelay, the feedback type for a Complaint, the
// reason for a Reject.
func sesDetail(typ string, e *sesEvent) string {
	switch typ {
	case "delivery":
		return detail("response", e.Delivery.SMTPResponse, "mta", e.Delivery.ReportingMTA)
	case "bounce":
		b := e.Bounce
		pairs := []string{"bounce", strings.Trim(b.BounceType+"/"+b.BounceSubType, "/")}
		for _, r := range b.BouncedRecipients {
			pairs = append(pairs, "status", r.Status, "diagnostic", r.DiagnosticCode)
		}
		return detail(append(pairs, "mta", b.ReportingMTA)...)
	case "deliverydelay":
		pairs := []string{"delay", e.DeliveryDelay.DelayType}
		for _, r := range e.DeliveryDelay.DelayedRecipients {
			pairs = append(pairs, "status", r.Status, "diagnostic", r.DiagnosticCode)
		}
		return detail(pairs...)
	case "complaint":
		return detail("feedback", e.Complaint.ComplaintFeedbackType)
	case "reject":
		return detail("reason", e.Reject.Reason)
	}
	return ""
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
			return evidence{event: eventName(provider.SES, "sns/"+lower(env.Type)), kind: ledger.KindOther}, nil // subscription confirmations
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
		key:        firstString(e.Mail.Tags[notice.KeyField]),
		attempt:    attemptNumber(e.Mail.Tags[notice.AttemptField]),
		providerID: e.Mail.MessageID,
		messageID:  e.Mail.CommonHeaders.MessageID,
		event:      eventName(provider.SES, typ),
		at:         parseTime(e.Mail.Timestamp),
	}
	ev.kind = ledger.KindOther
	switch lower(typ) {
	case "send":
		ev.to, ev.kind = ledger.Sent, ledger.KindAccepted
	case "deliverydelay":
		ev.to, ev.kind = ledger.Sent, ledger.KindDeferred
	case "delivery":
		ev.to, ev.kind, ev.at = ledger.Sent, ledger.KindDelivered, orTime(e.Delivery.Timestamp, ev.at)
	case "complaint":
		ev.to, ev.kind, ev.at = ledger.Sent, ledger.KindComplaint, orTime(e.Complaint.Timestamp, ev.at)
	case "open":
		ev.to, ev.kind, ev.at = ledger.Sent, ledger.KindEngagement, orTime(e.Open.Timestamp, ev.at)
	case "click":
		ev.to, ev.kind, ev.at = ledger.Sent, ledger.KindEngagement, orTime(e.Click.Timestamp, ev.at)
	case "bounce":
		ev.event += "/" + lower(e.Bounce.BounceType)
		ev.to, ev.kind, ev.at = ledger.Sent, ledger.KindBounceSoft, orTime(e.Bounce.Timestamp, ev.at)
		if lower(e.Bounce.BounceType) == "permanent" {
			ev.to, ev.kind = ledger.Failed, ledger.KindBounceHard
		}
	case "reject":
		ev.to, ev.kind = notSent(string(provider.SES), e.Reject.Reason), ledger.KindNotSent
	}
	ev.detail = sesDetail(lower(typ), &e)
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
		// What SendGrid says of the event: the receiving server's
		// response (delivered, deferred); the reason, the enhanced status
		// code, the bounce type and classification (bounce, dropped).
		Response       string `json:"response"`
		Reason         string `json:"reason"`
		Status         string `json:"status"`
		Classification string `json:"bounce_classification"`
	}
	if err := object(payload, &e); err != nil {
		return evidence{}, err
	}
	if e.Event == "" {
		return evidence{}, fmt.Errorf("%w (event)", errNoEvent)
	}
	key, attempt := firstString(e.NoticeKey), attemptNumber(e.Attempt)
	if key == "" {
		key = firstString(e.UniqueArgs[notice.KeyField]) // older webhook versions nest them
		attempt = attemptNumber(e.UniqueArgs[notice.AttemptField])
	}
	// An asynchronous bounce (the receiving server took the message,
	// then bounced it) carries neither unique_args nor sg_message_id, only
	// smtp-id: our Message-ID, which matches it.
	ev := evidence{key: key, attempt: attempt, providerID: sendGridMessageID(e.SGMessageID), messageID: e.SMTPID,
		event: eventName(provider.SendGrid, e.Event), kind: ledger.KindOther, at: parseTime(e.Timestamp),
		detail: detail("type", e.Type, "classification", e.Classification, "status", e.Status, "reason", e.Reason, "response", e.Response)}
	switch lower(e.Event) {
	case "processed":
		ev.to, ev.kind = ledger.Sent, ledger.KindAccepted
	case "delivered":
		ev.to, ev.kind = ledger.Sent, ledger.KindDelivered
	case "deferred":
		ev.to, ev.kind = ledger.Sent, ledger.KindDeferred
	case "open", "click":
		ev.to, ev.kind = ledger.Sent, ledger.KindEngagement
	case "spamreport":
		ev.to, ev.kind = ledger.Sent, ledger.KindComplaint
	case "bounce":
		// type "bounce" is a hard bounce, "blocked" a block: the
		// receiving server would not take it for now.
		ev.event += "/" + lower(e.Type)
		ev.to, ev.kind = ledger.Failed, ledger.KindBounceHard
		if lower(e.Type) == "blocked" {
			ev.to, ev.kind = ledger.Sent, ledger.KindBounceSoft
		}
	case "dropped":
		// Dropped before sending; a suppression (the reason names the
		// list) is failed, any other reason retry (notSent).
		ev.to, ev.kind = notSent(string(provider.SendGrid), e.Reason), ledger.KindNotSent
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
			// An object when the message carried X-Mailgun-Variables, []
			// when it carried none, a string when Mailgun could not read
			// them: read by userVariables, so none of these is malformed.
			UserVariables  json.RawMessage `json:"user-variables"`
			DeliveryStatus json.RawMessage `json:"delivery-status"`
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
	vars := userVariables(e.UserVariables)
	ds := mailgunStatus(e.DeliveryStatus)
	ev := evidence{
		key:       firstString(vars[notice.KeyField]),
		attempt:   attemptNumber(vars[notice.AttemptField]),
		messageID: e.Message.Headers.MessageID,
		event:     eventName(provider.Mailgun, e.Event),
		kind:      ledger.KindOther,
		at:        parseTime(e.Timestamp),
		detail: detail("severity", e.Severity, "reason", e.Reason, "code", ds.code(), "message", ds.Message,
			"description", ds.Description),
	}
	switch lower(e.Event) {
	case "accepted":
		ev.to, ev.kind = ledger.Sent, ledger.KindAccepted
	case "delivered":
		ev.to, ev.kind = ledger.Sent, ledger.KindDelivered
	case "opened", "clicked":
		ev.to, ev.kind = ledger.Sent, ledger.KindEngagement
	case "complained":
		ev.to, ev.kind = ledger.Sent, ledger.KindComplaint
	case "failed":
		ev.event += "/" + lower(e.Severity)
		mailgunFailure(&ev, lower(e.Severity), lower(e.Reason), ds)
	case "rejected":
		ev.to, ev.kind = ledger.Retry, ledger.KindNotSent
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
//   - permanent: Mailgun gave up: a bounce (failed), or a suppression
//     ("suppress-bounce", ...: dropped before sending, and a resend would
//     be too: failed, notSent).
//   - internal: a failure inside Mailgun; the message never left and
//     Mailgun does not retry it. Nothing suppresses the address, so a
//     resend can cure it: retry.
//
// Any other severity keeps the message accepted (sent), as temporary.
func mailgunFailure(ev *evidence, severity, reason string, ds mailgunDeliveryStatus) {
	switch severity {
	case "temporary":
		ev.to, ev.kind = ledger.Sent, ledger.KindDeferred
	case "internal":
		ev.to, ev.kind = ledger.Retry, ledger.KindNotSent
	case "permanent":
		switch {
		case strings.HasPrefix(reason, "suppress-"):
			ev.event += "/" + reason
			ev.to, ev.kind = notSent(string(provider.Mailgun), reason), ledger.KindNotSent // dropped before sending
		case reason == "old" || reason == "espblock" || lower(ds.BounceType) == "soft":
			// retries ran out, or the receiving provider blocked it
			ev.to, ev.kind = ledger.Failed, ledger.KindBounceSoft
		default:
			ev.to, ev.kind = ledger.Failed, ledger.KindBounceHard
		}
	default:
		ev.to = ledger.Sent // Mailgun accepted it
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

func decodePostmark(payload []byte) (evidence, error) {
	var e struct {
		RecordType  string                     `json:"RecordType"`
		Type        string                     `json:"Type"`
		MessageID   string                     `json:"MessageID"`
		Metadata    map[string]json.RawMessage `json:"Metadata"`
		DeliveredAt json.RawMessage            `json:"DeliveredAt"`
		BouncedAt   json.RawMessage            `json:"BouncedAt"`
		ReceivedAt  json.RawMessage            `json:"ReceivedAt"`
		// What Postmark says of the event: the bounce type's code and the
		// receiving server's details (Bounce, SpamComplaint), the details
		// of a Delivery (the server's response).
		TypeCode json.RawMessage `json:"TypeCode"`
		Details  string          `json:"Details"`
	}
	if err := object(payload, &e); err != nil {
		return evidence{}, err
	}
	if e.RecordType == "" {
		return evidence{}, fmt.Errorf("%w (RecordType)", errNoEvent)
	}
	ev := evidence{key: firstString(e.Metadata[notice.KeyField]), attempt: attemptNumber(e.Metadata[notice.AttemptField]),
		providerID: e.MessageID, event: eventName(provider.Postmark, e.RecordType), kind: ledger.KindOther}
	switch lower(e.RecordType) {
	case "delivery":
		ev.to, ev.kind, ev.at = ledger.Sent, ledger.KindDelivered, parseTime(e.DeliveredAt)
	case "open", "click":
		ev.to, ev.kind, ev.at = ledger.Sent, ledger.KindEngagement, parseTime(e.ReceivedAt)
	case "spamcomplaint":
		ev.to, ev.kind, ev.at = ledger.Sent, ledger.KindComplaint, parseTime(e.BouncedAt)
	case "bounce":
		ev.event += "/" + lower(e.Type)
		ev.to, ev.kind = postmarkBounce(lower(e.Type))
		ev.at = parseTime(e.BouncedAt)
	}
	if ev.to != "" {
		typ := e.Type
		if code := strings.Trim(string(e.TypeCode), `" `); typ != "" && code != "" && code != "null" {
			typ += " (" + code + ")"
		}
		ev.detail = detail("type", typ, "details", e.Details)
	}
	return ev, nil
}

// postmarkBounce classifies a Postmark Bounce by its Type (Postmark's bounce
// types, lower-cased). SMTPApiError is Postmark's internal rejection of a
// message sent by SMTP to a recipient it suppresses (after a bounce, a spam
// complaint, an unsubscribe or by hand): nothing was sent, and a resend is
// rejected again while the suppression stands, so it is failed, not sent.
// Every other bounce but a hard one leaves the message sent.
func postmarkBounce(typ string) (ledger.State, ledger.EventKind) {
	switch typ {
	case "hardbounce", "bademailaddress":
		return ledger.Failed, ledger.KindBounceHard
	case "smtpapierror":
		return notSent(string(provider.Postmark), typ), ledger.KindNotSent
	case "transient":
		return ledger.Sent, ledger.KindDeferred
	case "softbounce", "dnserror", "blocked", "dmarcpolicy":
		return ledger.Sent, ledger.KindBounceSoft
	case "spamcomplaint":
		return ledger.Sent, ledger.KindComplaint
	}
	return ledger.Sent, ledger.KindOther // auto-replies, address changes, unknown types
}
