package reconcile

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"scan/internal/ledger"
)

// Every branch of each decoder gives the kind of evidence the metric
// counts, beside the ledger state it leads to.
func TestDecoderKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format, payload string
		to              ledger.State
		kind            string
	}{
		{"ses", `{"eventType":"Send","mail":{"messageId":"a"}}`, ledger.Sent, KindAccepted},
		{"ses", `{"eventType":"Delivery","mail":{"messageId":"a"}}`, ledger.Sent, KindDelivered},
		{"ses", `{"eventType":"DeliveryDelay","mail":{"messageId":"a"}}`, ledger.Sent, KindDeferred},
		{"ses", `{"eventType":"Bounce","bounce":{"bounceType":"Transient"},"mail":{"messageId":"a"}}`, ledger.Sent, KindBounceSoft},
		{"ses", `{"notificationType":"Bounce","bounce":{"bounceType":"Permanent"},"mail":{"messageId":"a"}}`, ledger.Failed, KindBounceHard},
		{"ses", `{"eventType":"Complaint","mail":{"messageId":"a"}}`, ledger.Sent, KindComplaint},
		{"ses", `{"eventType":"Reject","mail":{"messageId":"a"}}`, ledger.Retry, KindNotSent},
		{"ses", `{"eventType":"Open","mail":{"messageId":"a"}}`, ledger.Sent, KindEngagement},
		{"ses", `{"eventType":"Rendering Failure","mail":{"messageId":"a"}}`, "", KindOther},
		{"ses", `{"Type":"SubscriptionConfirmation","Message":"You have chosen to subscribe"}`, "", KindOther},
		{"sendgrid", `{"event":"processed","sg_message_id":"a"}`, ledger.Sent, KindAccepted},
		{"sendgrid", `{"event":"delivered","sg_message_id":"a"}`, ledger.Sent, KindDelivered},
		{"sendgrid", `{"event":"deferred","sg_message_id":"a"}`, ledger.Sent, KindDeferred},
		{"sendgrid", `{"event":"bounce","type":"blocked","sg_message_id":"a"}`, ledger.Sent, KindBounceSoft},
		{"sendgrid", `{"event":"bounce","type":"bounce","smtp-id":"<a@b>"}`, ledger.Failed, KindBounceHard},
		{"sendgrid", `{"event":"spamreport","sg_message_id":"a"}`, ledger.Sent, KindComplaint},
		{"sendgrid", `{"event":"dropped","sg_message_id":"a"}`, ledger.Retry, KindNotSent},
		{"sendgrid", `{"event":"click","sg_message_id":"a"}`, ledger.Sent, KindEngagement},
		{"sendgrid", `{"event":"group_unsubscribe","sg_message_id":"a"}`, "", KindOther},
		{"mailgun", `{"event-data":{"event":"accepted","user-variables":[]}}`, ledger.Sent, KindAccepted},
		{"mailgun", `{"event-data":{"event":"delivered","user-variables":{}}}`, ledger.Sent, KindDelivered},
		{"mailgun", `{"event-data":{"event":"failed","severity":"temporary","reason":"generic"}}`, ledger.Sent, KindDeferred},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"old"}}`, ledger.Failed, KindBounceSoft},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"generic","delivery-status":{"bounce-type":"soft"}}}`, ledger.Failed, KindBounceSoft},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"bounce","delivery-status":{"bounce-type":"hard"}}}`, ledger.Failed, KindBounceHard},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"bounce","delivery-status":[]}}`, ledger.Failed, KindBounceHard},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"suppress-bounce"}}`, ledger.Retry, KindNotSent},
		{"mailgun", `{"event-data":{"event":"failed","severity":"internal","reason":"generic"}}`, ledger.Retry, KindNotSent},
		{"mailgun", `{"event-data":{"event":"rejected"}}`, ledger.Retry, KindNotSent},
		{"mailgun", `{"event-data":{"event":"complained"}}`, ledger.Sent, KindComplaint},
		{"mailgun", `{"event-data":{"event":"opened"}}`, ledger.Sent, KindEngagement},
		{"mailgun", `{"event-data":{"event":"unsubscribed","user-variables":"Could not load user-variables"}}`, "", KindOther},
		{"postmark", `{"RecordType":"Delivery","MessageID":"a"}`, ledger.Sent, KindDelivered},
		{"postmark", `{"RecordType":"Bounce","Type":"Transient","MessageID":"a"}`, ledger.Sent, KindDeferred},
		{"postmark", `{"RecordType":"Bounce","Type":"SoftBounce","MessageID":"a"}`, ledger.Sent, KindBounceSoft},
		{"postmark", `{"RecordType":"Bounce","Type":"HardBounce","MessageID":"a"}`, ledger.Failed, KindBounceHard},
		{"postmark", `{"RecordType":"Bounce","Type":"BadEmailAddress","MessageID":"a"}`, ledger.Failed, KindBounceHard},
		{"postmark", `{"RecordType":"Bounce","Type":"SMTPApiError","MessageID":"a"}`, ledger.Failed, KindNotSent},
		{"postmark", `{"RecordType":"Bounce","Type":"AutoResponder","MessageID":"a"}`, ledger.Sent, KindOther},
		{"postmark", `{"RecordType":"SpamComplaint","MessageID":"a"}`, ledger.Sent, KindComplaint},
		{"postmark", `{"RecordType":"Click","MessageID":"a"}`, ledger.Sent, KindEngagement},
		{"postmark", `{"RecordType":"SubscriptionChange","MessageID":"a"}`, "", KindOther},
	} {
		ev, err := decoders[tc.format]([]byte(tc.payload))
		if err != nil {
			t.Errorf("%s %s: %v", tc.format, tc.payload, err)
			continue
		}
		if ev.to != tc.to || ev.kind != tc.kind {
			t.Errorf("%s %s: %q/%s, want %q/%s", tc.format, tc.payload, ev.to, ev.kind, tc.to, tc.kind)
		}
	}
}

// Every payload of every provider fixture that decodes has a kind of
// Kinds, and one that proves nothing is "other".
func TestFixtureKinds(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/providers/*.txt")
	if err != nil || len(files) < len(decoders) {
		t.Fatalf("fixtures %v, %v", files, err)
	}
	for _, f := range files {
		format := filepath.Base(f)
		format = format[:len(format)-len(filepath.Ext(format))]
		format, _, _ = strings.Cut(format, "-") // sendgrid-details is sendgrid
		dec := decoders[format]
		if dec == nil {
			t.Fatalf("%s: no decoder %q", f, format)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		if _, err := split(bytes.NewReader(b), func(line int, payload []byte, problem string, oversized bool) error {
			if problem != "" || oversized {
				return nil
			}
			ev, err := dec(payload)
			if err != nil {
				return nil
			}
			seen++
			if !slices.Contains(Kinds, ev.kind) || ev.to == "" && ev.kind != KindOther {
				t.Errorf("%s:%d: kind %q, state %q", f, line, ev.kind, ev.to)
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
