package mailgun

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"scan/internal/receive"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// limit bounds a request: Mailgun posts one event per request, with its
// headers.
const limit = 1 << 20

// DefaultMaxAge is the oldest signature taken. Mailgun retries a webhook
// that was not answered 200 (or 406) for 8 hours
// (https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/webhook-retries:
// after 5 min, 10 min, 15 min, 1 h, 2 h and 4 h, about 7.5 h in all); the
// retry may carry the signature of the first attempt, so the limit is
// that window plus an hour of margin. An older signature is refused: its
// token may have been pruned (webhook_token keeps tokens this long), so a
// replay could no longer be told.
const DefaultMaxAge = 9 * time.Hour

// KeyVar is the setting that holds the webhook signing key.
const KeyVar = "MAILGUN_WEBHOOK_SIGNING_KEY"

// Webhook returns the endpoint of Mailgun's webhooks, verified with the
// signing key in KeyVar (getenv) and DefaultMaxAge; without it, an
// endpoint that accepts nothing.
func Webhook(getenv func(string) string) (receive.Endpoint, error) {
	return NewWebhook(getenv(KeyVar), DefaultMaxAge), nil
}

// NewWebhook returns the endpoint verified with signingKey, taking
// signatures up to maxAge old ("" accepts nothing).
func NewWebhook(signingKey string, maxAge time.Duration) receive.Endpoint {
	ep := receive.Endpoint{Name: string(Name), Limit: limit}
	if signingKey != "" {
		ep.Verify = func(r *http.Request, body []byte, now time.Time, _ zerolog.Logger) (receive.Verdict, error) {
			return verify(signingKey, maxAge, body, now)
		}
	}
	return ep
}

// mailgunSignature is the "signature" object of a Mailgun webhook body
// (https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks):
// timestamp (seconds since the epoch, sent as a string), a random token
// of 50 characters, and signature, the hex HMAC-SHA256 of timestamp
// followed by token with the webhook signing key.
type mailgunSignature struct {
	Timestamp json.RawMessage `json:"timestamp"`
	Token     string          `json:"token"`
	Signature string          `json:"signature"`
}

// verify checks a Mailgun webhook as Mailgun documents ("Securing
// webhooks", above): the HMAC, in constant time; then the timestamp, no
// older than maxAge (Mailgun's 8 hours of retries, see
// DefaultMaxAge) and no more than 5 minutes ahead; then, in the
// transaction that applies the events (package receive), the token, which must not
// have been seen before ("cache the token and deny subsequent requests
// with the same token"). A token seen before with the very same body is a
// retry of a request already committed (our 200 was lost): answered 200,
// nothing applied; with another body it is refused. The signature covers
// only timestamp and token, not event-data: the token is what stops a
// captured signature from carrying other events.
func verify(signingKey string, maxAge time.Duration, body []byte, now time.Time) (receive.Verdict, error) {
	var env struct {
		Signature *mailgunSignature `json:"signature"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Signature == nil {
		return receive.Verdict{}, receive.Unverified("no signature object in the body")
	}
	sg := env.Signature
	ts := string(bytes.Trim(sg.Timestamp, `"`))
	if ts == "" || sg.Token == "" || sg.Signature == "" {
		return receive.Verdict{}, receive.Unverified("signature object lacks timestamp, token or signature")
	}
	want, err := hex.DecodeString(sg.Signature)
	if err != nil {
		return receive.Verdict{}, receive.Refused("signature is not hex")
	}
	mac := hmac.New(sha256.New, []byte(signingKey))
	mac.Write([]byte(ts))
	mac.Write([]byte(sg.Token))
	if !hmac.Equal(mac.Sum(nil), want) {
		return receive.Verdict{}, receive.Refused("signature does not verify")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return receive.Verdict{}, receive.Refused("timestamp is not a number of seconds")
	}
	at := time.Unix(sec, 0).UTC()
	if now.Sub(at) > maxAge {
		return receive.Verdict{}, receive.Refused("signature older than %s", maxAge)
	}
	if at.Sub(now) > receive.MaxFutureSkew {
		return receive.Verdict{}, receive.Refused("signature timestamp ahead of our clock by more than %s", receive.MaxFutureSkew)
	}
	return receive.Verdict{Events: body, Token: &receive.Token{Value: sg.Token, SignedAt: at, Keep: maxAge}}, nil
}
