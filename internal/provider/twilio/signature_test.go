package twilio_test

import (
	"net/url"
	"testing"

	"scan/internal/provider/twilio"
)

// Twilio's own published example: auth token 12345, the URL and POST
// variables of TwilioDevEd/api-snippets,
// security/signature_validation/signature_validation.3.x.js (the example
// of https://www.twilio.com/docs/usage/webhooks/webhooks-security), whose
// X-Twilio-Signature is GvWf1cFY/Q7PnoempGyD5oXAezc=.
func TestVerifySignatureTwilioExample(t *testing.T) {
	const token = "12345"
	const u = "https://mycompany.com/myapp.php?foo=1&bar=2"
	form := url.Values{
		"CallSid": {"CA1234567890ABCDE"},
		"Caller":  {"+14158675310"},
		"Digits":  {"1234"},
		"From":    {"+14158675310"},
		"To":      {"+18005551212"},
	}
	const sig = "GvWf1cFY/Q7PnoempGyD5oXAezc="
	if got := twilio.Signature(token, u, form); got != sig {
		t.Fatalf("signature %s, want %s", got, sig)
	}
	if !twilio.VerifySignature(token, u, form, sig) {
		t.Fatal("Twilio's example does not verify")
	}
	forged := url.Values{}
	for k, v := range form {
		forged[k] = v
	}
	forged.Set("Digits", "1235")
	for name, c := range map[string]struct {
		token, url string
		form       url.Values
		sig        string
	}{
		"changed parameter": {token, u, forged, sig},
		"other URL":         {token, "https://mycompany.com/myapp.php?foo=1&bar=3", form, sig},
		"other token":       {"12346", u, form, sig},
		"no token":          {"", u, form, sig},
		"no signature":      {token, u, form, ""},
		"truncated":         {token, u, form, sig[:10]},
	} {
		if twilio.VerifySignature(c.token, c.url, c.form, c.sig) {
			t.Errorf("%s: verified", name)
		}
	}
}
