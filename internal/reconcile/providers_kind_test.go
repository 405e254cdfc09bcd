package reconcile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// Every branch of each decoder gives the kind of evidence the metric
// counts, beside the ledger state it leads to.
func TestDecoderKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format, payload string
		to              ledger.State
		kind            ledger.EventKind
	}{
		{"ses", `{"eventType":"Send","mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindAccepted},
		{"ses", `{"eventType":"Delivery","mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindDelivered},
		{"ses", `{"eventType":"DeliveryDelay","mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindDeferred},
		{"ses", `{"eventType":"Bounce","bounce":{"bounceType":"Transient"},"mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindBounceSoft},
		{"ses", `{"notificationType":"Bounce","bounce":{"bounceType":"Permanent"},"mail":{"messageId":"a"}}`, ledger.Failed, ledger.KindBounceHard},
		{"ses", `{"eventType":"Complaint","mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindComplaint},
		{"ses", `{"eventType":"Reject","mail":{"messageId":"a"}}`, ledger.Retry, ledger.KindNotSent},
		{"ses", `{"eventType":"Open","mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindEngagement},
		{"ses", `{"eventType":"Rendering Failure","mail":{"messageId":"a"}}`, "", ledger.KindOther},
		{"ses", `{"Type":"SubscriptionConfirmation","Message":"You have chosen to subscribe"}`, "", ledger.KindOther},
		{"sendgrid", `{"event":"processed","sg_message_id":"a"}`, ledger.Sent, ledger.KindAccepted},
		{"sendgrid", `{"event":"delivered","sg_message_id":"a"}`, ledger.Sent, ledger.KindDelivered},
		{"sendgrid", `{"event":"deferred","sg_message_id":"a"}`, ledger.Sent, ledger.KindDeferred},
		{"sendgrid", `{"event":"bounce","type":"blocked","sg_message_id":"a"}`, ledger.Sent, ledger.KindBounceSoft},
		{"sendgrid", `{"event":"bounce","type":"bounce","smtp-id":"<a@b>"}`, ledger.Failed, ledger.KindBounceHard},
		{"sendgrid", `{"event":"spamreport","sg_message_id":"a"}`, ledger.Sent, ledger.KindComplaint},
		{"sendgrid", `{"event":"dropped","sg_message_id":"a"}`, ledger.Retry, ledger.KindNotSent},
		{"sendgrid", `{"event":"dropped","reason":"Bounced Address","sg_message_id":"a"}`, ledger.Failed, ledger.KindNotSent},
		{"sendgrid", `{"event":"dropped","reason":"Invalid SMTPAPI header","sg_message_id":"a"}`, ledger.Retry, ledger.KindNotSent},
		{"sendgrid", `{"event":"click","sg_message_id":"a"}`, ledger.Sent, ledger.KindEngagement},
		{"sendgrid", `{"event":"group_unsubscribe","sg_message_id":"a"}`, "", ledger.KindOther},
		{"mailgun", `{"event-data":{"event":"accepted","user-variables":[]}}`, ledger.Sent, ledger.KindAccepted},
		{"mailgun", `{"event-data":{"event":"delivered","user-variables":{}}}`, ledger.Sent, ledger.KindDelivered},
		{"mailgun", `{"event-data":{"event":"failed","severity":"temporary","reason":"generic"}}`, ledger.Sent, ledger.KindDeferred},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"old"}}`, ledger.Failed, ledger.KindBounceSoft},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"generic","delivery-status":{"bounce-type":"soft"}}}`, ledger.Failed, ledger.KindBounceSoft},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"bounce","delivery-status":{"bounce-type":"hard"}}}`, ledger.Failed, ledger.KindBounceHard},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"bounce","delivery-status":[]}}`, ledger.Failed, ledger.KindBounceHard},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"suppress-bounce"}}`, ledger.Failed, ledger.KindNotSent},
		{"mailgun", `{"event-data":{"event":"failed","severity":"internal","reason":"generic"}}`, ledger.Retry, ledger.KindNotSent},
		{"mailgun", `{"event-data":{"event":"rejected"}}`, ledger.Retry, ledger.KindNotSent},
		{"mailgun", `{"event-data":{"event":"complained"}}`, ledger.Sent, ledger.KindComplaint},
		{"mailgun", `{"event-data":{"event":"opened"}}`, ledger.Sent, ledger.KindEngagement},
		{"mailgun", `{"event-data":{"event":"unsubscribed","user-variables":"Could not load user-variables"}}`, "", ledger.KindOther},
		{"postmark", `{"RecordType":"Delivery","MessageID":"a"}`, ledger.Sent, ledger.KindDelivered},
		{"postmark", `{"RecordType":"Bounce","Type":"Transient","MessageID":"a"}`, ledger.Sent, ledger.KindDeferred},
		{"postmark", `{"RecordType":"Bounce","Type":"SoftBounce","MessageID":"a"}`, ledger.Sent, ledger.KindBounceSoft},
		{"postmark", `{"RecordType":"Bounce","Type":"HardBounce","MessageID":"a"}`, ledger.Failed, ledger.KindBounceHard},
		{"postmark", `{"RecordType":"Bounce","Type":"BadEmailAddress","MessageID":"a"}`, ledger.Failed, ledger.KindBounceHard},
		{"postmark", `{"RecordType":"Bounce","Type":"SMTPApiError","MessageID":"a"}`, ledger.Failed, ledger.KindNotSent},
		{"postmark", `{"RecordType":"Bounce","Type":"AutoResponder","MessageID":"a"}`, ledger.Sent, ledger.KindOther},
		{"postmark", `{"RecordType":"SpamComplaint","MessageID":"a"}`, ledger.Sent, ledger.KindComplaint},
		{"postmark", `{"RecordType":"Click","MessageID":"a"}`, ledger.Sent, ledger.KindEngagement},
		{"postmark", `{"RecordType":"SubscriptionChange","MessageID":"a"}`, "", ledger.KindOther},
	} {
		ev, err := reconcile.DecoderOf(tc.format)([]byte(tc.payload))
		if err != nil {
			t.Errorf("%s %s: %v", tc.format, tc.payload, err)
			continue
		}
		if ev.To != tc.to || ev.Kind != tc.kind {
			t.Errorf("%s %s: %q/%s, want %q/%s", tc.format, tc.payload, ev.To, ev.Kind, tc.to, tc.kind)
		}
	}
}

// Every payload of every provider fixture that decodes has a kind of
// Kinds, and one that proves nothing is "other".
func TestFixtureKinds(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../provider/*/testdata/*.txt")
	if err != nil || len(files) < len(reconcile.Formats)-1 {
		t.Fatalf("fixtures %v, %v", files, err)
	}
	for _, f := range files {
		format := filepath.Base(filepath.Dir(filepath.Dir(f))) // ../provider/<format>/testdata
		dec := reconcile.DecoderOf(format)
		if dec == nil {
			t.Fatalf("%s: no decoder %q", f, format)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		if _, err := reconcile.Split(bytes.NewReader(b), func(line int, payload []byte, problem string, oversized bool) error {
			if problem != "" || oversized {
				return nil
			}
			ev, err := dec(payload)
			if err != nil {
				return nil
			}
			seen++
			if !slices.Contains(ledger.EventKinds, ev.Kind) || ev.To == "" && ev.Kind != ledger.KindOther {
				t.Errorf("%s:%d: kind %q, state %q", f, line, ev.Kind, ev.To)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if seen == 0 {
			t.Errorf("%s: no payload decoded", f)
		}
	}
}
