package receive

import (
	"net/http"
	"net/url"
	"strings"

	"scan/internal/ledger"
	"scan/internal/twilio"
)

// limitTwilio bounds a status callback: a form of a dozen short
// parameters (MessageSid, MessageStatus, ErrorCode, To, From, AccountSid,
// ApiVersion, ...; https://www.twilio.com/docs/messaging/guides/track-outbound-message-status).
const limitTwilio = 64 << 10

// verifyTwilio checks a status callback's X-Twilio-Signature as Twilio
// documents it ("Secure webhooks",
// https://www.twilio.com/docs/usage/webhooks/webhooks-security): an
// HMAC-SHA1 under the auth token of the full URL Twilio was given followed
// by the sorted POST parameters. The URL Twilio signs is the one the pass
// named as StatusCallback: the configured public URL (behind an ingress,
// the request's own scheme and host are not it) with the request's query,
// which carries the notice's key and attempt. No header: 401 unverified;
// a wrong one: 403 refused. A verified callback becomes one settlement of
// the notice its query names (twilio.DecodeCallback); a status that
// proves nothing is answered 200 and applies nothing.
func (s *Server) verifyTwilio(r *http.Request, body []byte) (verdict, error) {
	sig := r.Header.Get(twilio.SignatureHeader)
	if sig == "" {
		return verdict{}, unverified("no %s header", twilio.SignatureHeader)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return verdict{}, unverified("the body is not a form: %v", err)
	}
	if !twilio.VerifySignature(s.cfg.TwilioAuthToken, s.twilioURL(r), form, sig) {
		return verdict{}, refused("signature does not verify")
	}
	st, ok, err := twilio.DecodeCallback(r.URL.Query(), form)
	if err != nil {
		return verdict{}, malformed("%v", err)
	}
	if !ok {
		return verdict{result: "irrelevant"}, nil
	}
	return verdict{settlements: []ledger.Settlement{st}}, nil
}

// twilioURL is the URL Twilio signed for request r: the configured
// callback URL's scheme, host and path with r's query.
func (s *Server) twilioURL(r *http.Request) string {
	base := s.cfg.TwilioCallbackURL
	if i := strings.IndexByte(base, '?'); i >= 0 {
		base = base[:i]
	}
	if r.URL.RawQuery == "" {
		return base
	}
	return base + "?" + r.URL.RawQuery
}
