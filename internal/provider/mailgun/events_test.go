package mailgun_test

import (
	"testing"

	"scan/internal/ledger"
	"scan/internal/provider/mailgun"
)

// A permanent failure whose reason names a suppression (suppress-*) is
// failed, dropped; "old" (Mailgun's retries ran out) a final soft bounce;
// "espblock" a block; a temporary failure is deferred (Mailgun retries); any other reason of a permanent failure is a bounce,
// failed too; an internal failure is retry.
func TestFailureReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		severity, reason string
		to               ledger.State
		kind             ledger.EventKind
	}{
		{"permanent", "suppress-bounce", ledger.Failed, ledger.KindDropped},
		{"permanent", "suppress-unsubscribe", ledger.Failed, ledger.KindDropped},
		{"permanent", "suppress-complaint", ledger.Failed, ledger.KindDropped},
		{"permanent", "old", ledger.Failed, ledger.KindBounceSoft},
		{"permanent", "espblock", ledger.Failed, ledger.KindBlocked},
		{"temporary", "generic", ledger.Sent, ledger.KindDeferred},
		{"temporary", "old", ledger.Sent, ledger.KindBounceSoft},
		{"permanent", "generic", ledger.Failed, ledger.KindBounceHard},
		{"permanent", "Bounced Address", ledger.Failed, ledger.KindBounceHard},
		{"internal", "generic", ledger.Retry, ledger.KindNotSent},
	} {
		s, err := mailgun.Decode([]byte(`{"event-data":{"event":"failed","severity":"` + tc.severity + `","reason":"` + tc.reason + `","message":{"headers":{"message-id":"a@b"}}}}`))
		if err != nil || s.To != tc.to || s.Kind != tc.kind {
			t.Errorf("%s %q: %s %s, %v; want %s %s", tc.severity, tc.reason, s.To, s.Kind, err, tc.to, tc.kind)
		}
	}
}
