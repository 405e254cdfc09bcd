package mailgun_test

import (
	"testing"

	"scan/internal/ledger"
	"scan/internal/provider/mailgun"
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
		{`{"event-data":{"event":"accepted","user-variables":[]}}`, ledger.Sent, ledger.KindAccepted},
		{`{"event-data":{"event":"delivered","user-variables":{}}}`, ledger.Sent, ledger.KindDelivered},
		{`{"event-data":{"event":"failed","severity":"temporary","reason":"generic"}}`, ledger.Sent, ledger.KindDeferred},
		{`{"event-data":{"event":"failed","severity":"permanent","reason":"old"}}`, ledger.Failed, ledger.KindBounceSoft},
		{`{"event-data":{"event":"failed","severity":"permanent","reason":"generic","delivery-status":{"bounce-type":"soft"}}}`, ledger.Failed, ledger.KindBounceSoft},
		{`{"event-data":{"event":"failed","severity":"permanent","reason":"bounce","delivery-status":{"bounce-type":"hard"}}}`, ledger.Failed, ledger.KindBounceHard},
		{`{"event-data":{"event":"failed","severity":"permanent","reason":"bounce","delivery-status":[]}}`, ledger.Failed, ledger.KindBounceHard},
		{`{"event-data":{"event":"failed","severity":"permanent","reason":"suppress-bounce"}}`, ledger.Failed, ledger.KindDropped},
		{`{"event-data":{"event":"failed","severity":"internal","reason":"generic"}}`, ledger.Retry, ledger.KindNotSent},
		{`{"event-data":{"event":"rejected"}}`, ledger.Retry, ledger.KindNotSent},
		{`{"event-data":{"event":"complained"}}`, ledger.Sent, ledger.KindComplaint},
		{`{"event-data":{"event":"opened"}}`, ledger.Sent, ledger.KindEngagement},
		{`{"event-data":{"event":"unsubscribed","user-variables":"Could not load user-variables"}}`, "", ledger.KindOther},
	} {
		ev, err := mailgun.Decode([]byte(tc.payload))
		if err != nil {
			t.Errorf("%s: %v", tc.payload, err)
			continue
		}
		if ev.To != tc.to || ev.Kind != tc.kind {
			t.Errorf("%s: %q/%s, want %q/%s", tc.payload, ev.To, ev.Kind, tc.to, tc.kind)
		}
	}
}
