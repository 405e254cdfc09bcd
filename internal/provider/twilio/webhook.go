package twilio

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"scan/internal/ledger"
	"scan/internal/receive"

	"github.com/rs/zerolog"
)

// limit bounds a status callback: a form of a dozen short
// parameters (MessageSid, MessageStatus, ErrorCode, To, From, AccountSid,
// ApiVersion, ...; https://www.twilio.com/docs/messaging/guides/track-outbound-message-status).
const limit = 64 << 10

// The settings of the status callbacks' endpoint: the auth token that
// signs them, and the public URL Twilio posts them to (the StatusCallback
// the pass names): the URL Twilio signs. Both are required for the
// endpoint.
const (
	AuthTokenVar   = "TWILIO_AUTH_TOKEN"
	CallbackURLVar = "SCAN_TWILIO_STATUS_CALLBACK"
)

// Webhook returns the endpoint of the status callbacks, configured from
// AuthTokenVar and CallbackURLVar (getenv); without both, an endpoint that
// accepts nothing; a callback URL that is not an absolute http(s) URL is
// a *receive.ConfigError naming CallbackURLVar.
func Webhook(getenv func(string) string) (receive.Endpoint, error) {
	token, callback := getenv(AuthTokenVar), getenv(CallbackURLVar)
	ep := receive.Endpoint{Name: string(Name), Limit: limit}
	if callback != "" {
		if u, err := url.Parse(callback); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return ep, &receive.ConfigError{Field: CallbackURLVar, Msg: "not an absolute http(s) URL: the public URL of /events/twilio"}
		}
	}
	if token != "" && callback != "" {
		ep.Verify = func(r *http.Request, body []byte, _ time.Time, _ zerolog.Logger) (receive.Verdict, error) {
			return verify(token, callback, r, body)
		}
	}
	return ep, nil
}

// verify checks a status callback's X-Twilio-Signature as Twilio
// documents it ("Secure webhooks",
// https://www.twilio.com/docs/usage/webhooks/webhooks-security): an
// HMAC-SHA1 under the auth token of the full URL Twilio was given followed
// by the sorted POST parameters. The URL Twilio signs is the one the pass
// named as StatusCallback: the configured public URL (behind an ingress,
// the request's own scheme and host are not it) with the request's query,
// which carries the notice's key and attempt. No header: 401 unverified;
// a wrong one: 403 refused. A verified callback becomes one settlement of
// the notice its query names (DecodeCallback); a status that
// proves nothing is answered 200 and applies nothing.
func verify(authToken, callback string, r *http.Request, body []byte) (receive.Verdict, error) {
	sig := r.Header.Get(SignatureHeader)
	if sig == "" {
		return receive.Verdict{}, receive.Unverified("no %s header", SignatureHeader)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return receive.Verdict{}, receive.Unverified("the body is not a form: %v", err)
	}
	if !VerifySignature(authToken, signedURL(callback, r), form, sig) {
		return receive.Verdict{}, receive.Refused("signature does not verify")
	}
	st, ok, err := DecodeCallback(r.URL.Query(), form)
	if err != nil {
		return receive.Verdict{}, receive.Malformed("%v", err)
	}
	if !ok {
		return receive.Verdict{Result: "irrelevant"}, nil
	}
	return receive.Verdict{Settlements: []ledger.Settlement{st}}, nil
}

// signedURL is the URL Twilio signed for request r: the configured
// callback URL's scheme, host and path with r's query.
func signedURL(callback string, r *http.Request) string {
	base := callback
	if i := strings.IndexByte(base, '?'); i >= 0 {
		base = base[:i]
	}
	if r.URL.RawQuery == "" {
		return base
	}
	return base + "?" + r.URL.RawQuery
}
