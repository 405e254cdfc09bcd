package postmark_test

import (
	"testing"

	"scan/internal/ledger"
	"scan/internal/provider/postmark"
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
		{`{"RecordType":"Delivery","MessageID":"a"}`, ledger.Sent, ledger.KindDelivered},
		{`{"RecordType":"Bounce","Type":"Transient","MessageID":"a"}`, ledger.Sent, ledger.KindDeferred},
		{`{"RecordType":"Bounce","Type":"SoftBounce","MessageID":"a"}`, ledger.Sent, ledger.KindBounceSoft},
		{`{"RecordType":"Bounce","Type":"Blocked","MessageID":"a"}`, ledger.Sent, ledger.KindBlocked},
		{`{"RecordType":"Bounce","Type":"DMARCPolicy","MessageID":"a"}`, ledger.Sent, ledger.KindBlocked},
		{`{"RecordType":"Bounce","Type":"HardBounce","MessageID":"a"}`, ledger.Failed, ledger.KindBounceHard},
		{`{"RecordType":"Bounce","Type":"BadEmailAddress","MessageID":"a"}`, ledger.Failed, ledger.KindBounceHard},
		{`{"RecordType":"Bounce","Type":"SMTPApiError","MessageID":"a"}`, ledger.Failed, ledger.KindNotSent},
		{`{"RecordType":"Bounce","Type":"AutoResponder","MessageID":"a"}`, ledger.Sent, ledger.KindOther},
		{`{"RecordType":"SpamComplaint","MessageID":"a"}`, ledger.Sent, ledger.KindComplaint},
		{`{"RecordType":"Click","MessageID":"a"}`, ledger.Sent, ledger.KindEngagement},
		{`{"RecordType":"SubscriptionChange","MessageID":"a"}`, "", ledger.KindOther},
	} {
		ev, err := postmark.Decode([]byte(tc.payload))
		if err != nil {
			t.Errorf("%s: %v", tc.payload, err)
			continue
		}
		if ev.To != tc.to || ev.Kind != tc.kind {
			t.Errorf("%s: %q/%s, want %q/%s", tc.payload, ev.To, ev.Kind, tc.to, tc.kind)
		}
	}
}
