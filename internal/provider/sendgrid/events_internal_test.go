package sendgrid

import (
	"testing"

	"scan/internal/ledger"
)

// A dropped event is failed only when its reason names one of SendGrid's
// suppression lists, as SendGrid documents them; anything else a resend
// can cure.
func TestNotSent(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]ledger.State{
		"Bounced Address":        ledger.Failed,
		"Unsubscribed Address":   ledger.Failed,
		"Spam Reporting Address": ledger.Failed,
		"Invalid":                ledger.Failed,
		" bounced address ":      ledger.Failed,
		"Invalid SMTPAPI header": ledger.Retry,
		"Spam Content":           ledger.Retry,
		"":                       ledger.Retry,
	} {
		if got := notSent(reason); got != want {
			t.Errorf("notSent(%q) = %s, want %s", reason, got, want)
		}
	}
}
