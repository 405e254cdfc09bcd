package reconcile

import (
	"testing"

	"scan/internal/ledger"
)

// Every event the readers produce has the kind the metric and the
// precedence rules expect; the state a decoder chose (a suppression is
// failed, see notSent) stands.
func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		event    string
		to, want ledger.State
		kind     ledger.EventKind
	}{
		{"ses:send", ledger.Sent, ledger.Sent, ledger.KindAccepted},
		{"ses:delivery", ledger.Sent, ledger.Sent, ledger.KindDelivered},
		{"ses:deliverydelay", ledger.Sent, ledger.Sent, ledger.KindDeferred},
		{"ses:bounce/permanent", ledger.Failed, ledger.Failed, ledger.KindBounceHard},
		{"ses:bounce/transient", ledger.Sent, ledger.Sent, ledger.KindBounceSoft},
		{"ses:complaint", ledger.Sent, ledger.Sent, ledger.KindComplaint},
		{"ses:open", ledger.Sent, ledger.Sent, ledger.KindEngagement},
		{"ses:reject", ledger.Retry, ledger.Retry, ledger.KindNotSent},
		{"sendgrid:processed", ledger.Sent, ledger.Sent, ledger.KindAccepted},
		{"sendgrid:dropped", ledger.Retry, ledger.Retry, ledger.KindNotSent},
		{"sendgrid:dropped", ledger.Failed, ledger.Failed, ledger.KindNotSent},
		{"sendgrid:bounce/blocked", ledger.Sent, ledger.Sent, ledger.KindBounceSoft},
		{"sendgrid:spamreport", ledger.Sent, ledger.Sent, ledger.KindComplaint},
		{"sendgrid:click", ledger.Sent, ledger.Sent, ledger.KindEngagement},
		{"mailgun:accepted", ledger.Sent, ledger.Sent, ledger.KindAccepted},
		{"mailgun:failed/temporary", ledger.Sent, ledger.Sent, ledger.KindDeferred},
		{"mailgun:failed/permanent", ledger.Failed, ledger.Failed, ledger.KindBounceHard},
		{"mailgun:failed/permanent/suppress-bounce", ledger.Failed, ledger.Failed, ledger.KindNotSent},
		{"mailgun:rejected", ledger.Retry, ledger.Retry, ledger.KindNotSent},
		{"postmark:delivery", ledger.Sent, ledger.Sent, ledger.KindDelivered},
		{"postmark:bounce/hardbounce", ledger.Failed, ledger.Failed, ledger.KindBounceHard},
		{"postmark:bounce/softbounce", ledger.Sent, ledger.Sent, ledger.KindBounceSoft},
		{"postmark:bounce/smtpapierror", ledger.Retry, ledger.Retry, ledger.KindNotSent},
		{"postmark:spamcomplaint", ledger.Sent, ledger.Sent, ledger.KindComplaint},
		{"accepted", ledger.Sent, ledger.Sent, ledger.KindAccepted},
		{"bounced", ledger.Sent, ledger.Sent, ledger.KindBounceSoft},
		{"dropped", ledger.Retry, ledger.Retry, ledger.KindNotSent},
		{"opened", ledger.Sent, ledger.Sent, ledger.KindEngagement},
		{"ses:something", ledger.Sent, ledger.Sent, ledger.KindOther},
	} {
		s := ledger.Settlement{Event: tc.event, To: tc.to}
		classify(&s)
		if s.Kind != tc.kind || s.To != tc.want {
			t.Errorf("%s (%s): %s %s, want %s %s", tc.event, tc.to, s.Kind, s.To, tc.kind, tc.want)
		}
	}
}

// The attempt a provider echoes is read as a number or a string of one,
// or the first of SES's tag arrays; anything else is unknown (0).
func TestAttemptNumber(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]int{`2`: 2, `"3"`: 3, `["4"]`: 4, `" 5 "`: 5, `0`: 0, `-1`: 0, `"x"`: 0, `1.5`: 0, `null`: 0, ``: 0, `{}`: 0} {
		if got := AttemptNumber([]byte(raw)); got != want {
			t.Errorf("AttemptNumber(%s) = %d, want %d", raw, got, want)
		}
	}
}
