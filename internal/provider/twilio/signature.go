package twilio

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"net/url"
	"sort"
)

// SignatureHeader is the header Twilio signs its webhooks with.
const SignatureHeader = "X-Twilio-Signature"

// Signature returns what Twilio puts in X-Twilio-Signature for a POST to
// fullURL with form: base64 of HMAC-SHA1 under the auth token of the full
// URL (scheme, host, path and query, as Twilio was given it) followed by
// every POST parameter's name and value, sorted by name (a name given
// several times: each value, in order). "Secure webhooks",
// https://www.twilio.com/docs/usage/webhooks/webhooks-security.
func Signature(authToken, fullURL string, form url.Values) string {
	names := make([]string, 0, len(form))
	for k := range form {
		names = append(names, k)
	}
	sort.Strings(names)
	m := hmac.New(sha1.New, []byte(authToken))
	m.Write([]byte(fullURL))
	for _, k := range names {
		for _, v := range form[k] {
			m.Write([]byte(k))
			m.Write([]byte(v))
		}
	}
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// VerifySignature reports whether signature (the X-Twilio-Signature
// header) is Twilio's for a POST of form to fullURL, compared in constant
// time. An empty token or signature never verifies: an endpoint whose
// token is not configured accepts nothing.
func VerifySignature(authToken, fullURL string, form url.Values, signature string) bool {
	if authToken == "" || signature == "" {
		return false
	}
	want := Signature(authToken, fullURL, form)
	return subtle.ConstantTimeCompare([]byte(want), []byte(signature)) == 1
}
