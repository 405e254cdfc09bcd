package ses

import (
	"encoding/json"
	"errors"
	"fmt"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/reconcile"
	"strings"
)

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
		return reconcile.Detail("response", e.Delivery.SMTPResponse, "mta", e.Delivery.ReportingMTA)
	case "bounce":
		b := e.Bounce
		pairs := []string{"bounce", strings.Trim(b.BounceType+"/"+b.BounceSubType, "/")}
		for _, r := range b.BouncedRecipients {
			pairs = append(pairs, "status", r.Status, "diagnostic", r.DiagnosticCode)
		}
		return reconcile.Detail(append(pairs, "mta", b.ReportingMTA)...)
	case "deliverydelay":
		pairs := []string{"delay", e.DeliveryDelay.DelayType}
		for _, r := range e.DeliveryDelay.DelayedRecipients {
			pairs = append(pairs, "status", r.Status, "diagnostic", r.DiagnosticCode)
		}
		return reconcile.Detail(pairs...)
	case "complaint":
		return reconcile.Detail("feedback", e.Complaint.ComplaintFeedbackType)
	case "reject":
		return reconcile.Detail("reason", e.Reject.Reason)
	}
	return ""
}

// snsEnvelope is an Amazon SNS notification: the SES event is the JSON
// string in Message.
type snsEnvelope struct {
	Type    string  `json:"Type"`
	Message *string `json:"Message"`
}

func Decode(payload []byte) (ledger.Settlement, error) {
	var env snsEnvelope
	if err := reconcile.Object(payload, &env); err != nil {
		return ledger.Settlement{}, err
	}
	if env.Type != "" && env.Message != nil {
		if env.Type != "Notification" {
			return ledger.Settlement{Event: reconcile.EventName(Name, "sns/"+reconcile.Lower(env.Type)), Kind: ledger.KindOther}, nil // subscription confirmations
		}
		payload = []byte(strings.TrimSpace(*env.Message))
		if len(payload) == 0 || payload[0] != '{' {
			return ledger.Settlement{}, errors.New("SNS Message is not a JSON object")
		}
	}
	var e sesEvent
	if err := reconcile.Object(payload, &e); err != nil {
		return ledger.Settlement{}, err
	}
	typ := e.EventType
	if typ == "" {
		typ = e.NotificationType
	}
	if typ == "" {
		return ledger.Settlement{}, fmt.Errorf("%w (eventType)", reconcile.ErrNoEvent)
	}
	ev := ledger.Settlement{
		Key:        reconcile.FirstString(e.Mail.Tags[notice.KeyField]),
		Attempt:    reconcile.AttemptNumber(e.Mail.Tags[notice.AttemptField]),
		ProviderID: e.Mail.MessageID,
		MessageID:  e.Mail.CommonHeaders.MessageID,
		Event:      reconcile.EventName(Name, typ),
		At:         reconcile.ParseTime(e.Mail.Timestamp),
	}
	ev.Kind = ledger.KindOther
	switch reconcile.Lower(typ) {
	case "send":
		ev.To, ev.Kind = ledger.Sent, ledger.KindAccepted
	case "deliverydelay":
		ev.To, ev.Kind = ledger.Sent, ledger.KindDeferred
	case "delivery":
		ev.To, ev.Kind, ev.At = ledger.Sent, ledger.KindDelivered, reconcile.OrTime(e.Delivery.Timestamp, ev.At)
	case "complaint":
		ev.To, ev.Kind, ev.At = ledger.Sent, ledger.KindComplaint, reconcile.OrTime(e.Complaint.Timestamp, ev.At)
	case "open":
		ev.To, ev.Kind, ev.At = ledger.Sent, ledger.KindEngagement, reconcile.OrTime(e.Open.Timestamp, ev.At)
	case "click":
		ev.To, ev.Kind, ev.At = ledger.Sent, ledger.KindEngagement, reconcile.OrTime(e.Click.Timestamp, ev.At)
	case "bounce":
		ev.Event += "/" + reconcile.Lower(e.Bounce.BounceType)
		ev.To, ev.Kind, ev.At = ledger.Sent, ledger.KindBounceSoft, reconcile.OrTime(e.Bounce.Timestamp, ev.At)
		if reconcile.Lower(e.Bounce.BounceType) == "permanent" {
			ev.To, ev.Kind = ledger.Failed, ledger.KindBounceHard
		}
	case "reject":
		ev.To, ev.Kind = ledger.Retry, ledger.KindNotSent
	}
	ev.Detail = sesDetail(reconcile.Lower(typ), &e)
	return ev, nil
}
