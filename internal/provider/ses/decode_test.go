package ses_test

import (
	"testing"

	"scan/internal/ledger"
	"scan/internal/provider/ses"
)

// Every branch of the decoder gives the kind of evidence the metric
// counts, beside the ledger state it leads to.
func TestDecodeKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		to      ledger.State
		kind    ledger.EventKind
	}{
		{`{"eventType":"Send","mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindAccepted},
		{`{"eventType":"Delivery","mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindDelivered},
		{`{"eventType":"DeliveryDelay","mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindDeferred},
		{`{"eventType":"Bounce","bounce":{"bounceType":"Transient"},"mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindBounceSoft},
		{`{"notificationType":"Bounce","bounce":{"bounceType":"Permanent"},"mail":{"messageId":"a"}}`, ledger.Failed, ledger.KindBounceHard},
		{`{"eventType":"Complaint","mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindComplaint},
		{`{"eventType":"Reject","mail":{"messageId":"a"}}`, ledger.Retry, ledger.KindNotSent},
		{`{"eventType":"Open","mail":{"messageId":"a"}}`, ledger.Sent, ledger.KindEngagement},
		{`{"eventType":"Rendering Failure","mail":{"messageId":"a"}}`, "", ledger.KindOther},
		{`{"Type":"SubscriptionConfirmation","Message":"You have chosen to subscribe"}`, "", ledger.KindOther},
	} {
		ev, err := ses.Decode([]byte(tc.payload))
		if err != nil {
			t.Errorf("%s: %v", tc.payload, err)
			continue
		}
		if ev.To != tc.to || ev.Kind != tc.kind {
			t.Errorf("%s: %q/%s, want %q/%s", tc.payload, ev.To, ev.Kind, tc.to, tc.kind)
		}
	}
}
