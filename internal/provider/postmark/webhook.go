package postmark

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"scan/internal/receive"
	"time"

	"github.com/rs/zerolog"
)

// limit bounds a request: Postmark posts one event per request; a Bounce
// may include the bounced message's content, which is one of our notices
// (a few KB).
const limit = 1 << 20

// The settings that hold the basic-auth credentials put in the webhook's
// URL; both are required for the endpoint.
const (
	UserVar     = "POSTMARK_WEBHOOK_USER"
	PasswordVar = "POSTMARK_WEBHOOK_PASSWORD"
)

// Webhook returns the endpoint of Postmark's webhooks, verified with the
// credentials in UserVar and PasswordVar (getenv); without them, an
// endpoint that accepts nothing; with one only, a *receive.ConfigError.
func Webhook(getenv func(string) string) (receive.Endpoint, error) {
	user, pass := getenv(UserVar), getenv(PasswordVar)
	ep := receive.Endpoint{Name: string(Name), Limit: limit, Challenge: `Basic realm="scan receive"`}
	if (user == "") != (pass == "") {
		return ep, &receive.ConfigError{Field: UserVar + ", " + PasswordVar, Msg: "set both or neither"}
	}
	if user != "" {
		ep.Verify = func(r *http.Request, body []byte, _ time.Time, _ zerolog.Logger) (receive.Verdict, error) {
			return verify(user, pass, r, body)
		}
	}
	return ep, nil
}

// verify checks the basic-auth credentials that Postmark sends
// from the webhook's URL (https://user:password@host/events/postmark):
// "Postmark does not sign webhooks; protect the URL with basic HTTP
// authentication" (https://postmarkapp.com/developer/webhooks/webhooks-overview,
// "Protecting your webhook"). It is the only mechanism Postmark has. User
// and password are compared in constant time, as digests so that not even
// their lengths leak. No credentials: 401 unverified; wrong ones: 401
// refused (both with WWW-Authenticate).
func verify(wantUser, wantPass string, r *http.Request, body []byte) (receive.Verdict, error) {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return receive.Verdict{}, receive.Unverified("no basic-auth credentials")
	}
	u1, u2 := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(wantUser))
	p1, p2 := sha256.Sum256([]byte(pass)), sha256.Sum256([]byte(wantPass))
	okUser := subtle.ConstantTimeCompare(u1[:], u2[:])
	okPass := subtle.ConstantTimeCompare(p1[:], p2[:])
	if okUser&okPass != 1 {
		// 401, not 403: Postmark stops retrying at a 403, so credentials
		// rotated in Postmark before the Secret would lose the events of
		// the meantime; at a 401 it retries for about 10 hours.
		return receive.Verdict{}, &receive.Refusal{Status: http.StatusUnauthorized, Result: "refused", Reason: "wrong basic-auth credentials"}
	}
	return receive.Verdict{Events: body}, nil
}
