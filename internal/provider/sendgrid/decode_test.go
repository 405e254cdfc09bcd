package sendgrid_test

import (
	"testing"

	"scan/internal/ledger"
	"scan/internal/provider/sendgrid"
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
		{`{"event":"processed","sg_message_id":"a"}`, ledger.Sent, ledger.KindAccepted},
		{`{"event":"delivered","sg_message_id":"a"}`, ledger.Sent, ledger.KindDelivered},
		{`{"event":"deferred","sg_message_id":"a"}`, ledger.Sent, ledger.KindDeferred},
		{`{"event":"bounce","type":"blocked","sg_message_id":"a"}`, ledger.Sent, ledger.KindBlocked},
		{`{"event":"bounce","type":"bounce","smtp-id":"<a@b>"}`, ledger.Failed, ledger.KindBounceHard},
		{`{"event":"spamreport","sg_message_id":"a"}`, ledger.Sent, ledger.KindComplaint},
		{`{"event":"dropped","sg_message_id":"a"}`, ledger.Retry, ledger.KindDropped},
		{`{"event":"dropped","reason":"Bounced Address","sg_message_id":"a"}`, ledger.Failed, ledger.KindDropped},
		{`{"event":"dropped","reason":"Invalid SMTPAPI header","sg_message_id":"a"}`, ledger.Retry, ledger.KindDropped},
		{`{"event":"click","sg_message_id":"a"}`, ledger.Sent, ledger.KindEngagement},
		{`{"event":"group_unsubscribe","sg_message_id":"a"}`, "", ledger.KindOther},
	} {
		ev, err := sendgrid.Decode([]byte(tc.payload))
		if err != nil {
			t.Errorf("%s: %v", tc.payload, err)
			continue
		}
		if ev.To != tc.to || ev.Kind != tc.kind {
			t.Errorf("%s: %q/%s, want %q/%s", tc.payload, ev.To, ev.Kind, tc.to, tc.kind)
		}
	}
}
