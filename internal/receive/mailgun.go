package receive

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

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

// verifyMailgun checks a Mailgun webhook as Mailgun documents ("Securing
// webhooks", above): the HMAC, in constant time; then the timestamp, no
// older than Config.MailgunMaxAge (Mailgun's 8 hours of retries, see
// DefaultMailgunMaxAge) and no more than 5 minutes ahead; then, in the
// transaction that applies the events (apply), the token, which must not
// have been seen before ("cache the token and deny subsequent requests
// with the same token"). A token seen before with the very same body is a
// retry of a request already committed (our 200 was lost): answered 200,
// nothing applied; with another body it is refused. The signature covers
// only timestamp and token, not event-data: the token is what stops a
// captured signature from carrying other events.
func (s *Server) verifyMailgun(r *http.Request, body []byte) (verdict, error) {
	var env struct {
		Signature *mailgunSignature `json:"signature"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Signature == nil {
		return verdict{}, unverified("no signature object in the body")
	}
	sg := env.Signature
	ts := string(bytes.Trim(sg.Timestamp, `"`))
	if ts == "" || sg.Token == "" || sg.Signature == "" {
		return verdict{}, unverified("signature object lacks timestamp, token or signature")
	}
	want, err := hex.DecodeString(sg.Signature)
	if err != nil {
		return verdict{}, refused("signature is not hex")
	}
	mac := hmac.New(sha256.New, []byte(s.cfg.MailgunSigningKey))
	mac.Write([]byte(ts))
	mac.Write([]byte(sg.Token))
	if !hmac.Equal(mac.Sum(nil), want) {
		return verdict{}, refused("signature does not verify")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return verdict{}, refused("timestamp is not a number of seconds")
	}
	at, now := time.Unix(sec, 0).UTC(), s.now()
	if now.Sub(at) > s.cfg.MailgunMaxAge {
		return verdict{}, refused("signature older than %s", s.cfg.MailgunMaxAge)
	}
	if at.Sub(now) > maxFutureSkew {
		return verdict{}, refused("signature timestamp ahead of our clock by more than %s", maxFutureSkew)
	}
	return verdict{events: body, token: &token{value: sg.Token, signedAt: at}}, nil
}
