package sendgrid

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net/http"
	"scan/internal/receive"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// limit bounds a request: SendGrid posts events in batches of at most
// 768 KB (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook).
const limit = 2 << 20

// KeyVar is the setting that holds the Event Webhook's verification key
// as SendGrid shows it: base64 of the DER (PKIX) ECDSA P-256 public key.
const KeyVar = "SENDGRID_WEBHOOK_PUBLIC_KEY"

// Webhook returns the endpoint of the signed Event Webhook, verified with
// the key in KeyVar (getenv); without it, an endpoint that accepts
// nothing. A key that is not one is a *receive.ConfigError naming KeyVar.
func Webhook(getenv func(string) string) (receive.Endpoint, error) {
	ep := receive.Endpoint{Name: string(Name), Limit: limit}
	if getenv(KeyVar) == "" {
		return ep, nil
	}
	k, err := parseKey(getenv(KeyVar))
	if err != nil {
		return ep, &receive.ConfigError{Field: KeyVar, Msg: err.Error()}
	}
	ep.Verify = func(r *http.Request, body []byte, _ time.Time, _ zerolog.Logger) (receive.Verdict, error) {
		return verify(k, r, body)
	}
	return ep, nil
}

// The headers of SendGrid's signed Event Webhook.
const (
	sendGridSignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	sendGridTimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// parseKey reads the verification key as SendGrid shows it: the
// base64 of the DER (PKIX) encoding of an ECDSA P-256 public key
// (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features,
// "Signed Event Webhook Requests"). A PEM block is taken too.
func parseKey(s string) (*ecdsa.PublicKey, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "-----BEGIN PUBLIC KEY-----")
	s = strings.TrimSuffix(s, "-----END PUBLIC KEY-----")
	s = strings.Join(strings.Fields(s), "")
	der, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not base64 (paste the verification key as SendGrid shows it)")
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, errors.New("not a DER public key (paste the verification key as SendGrid shows it)")
	}
	ek, ok := k.(*ecdsa.PublicKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 public key")
	}
	return ek, nil
}

// verify checks the signed Event Webhook: the signature header is
// the base64 of an ASN.1 DER ECDSA signature over SHA-256 of the
// timestamp header followed by the raw body, by the account's P-256 key
// (the security-features page above; SendGrid's own Go helper does the
// same, github.com/sendgrid/sendgrid-go helpers/eventwebhook
// VerifySignature). The timestamp's age is not limited: SendGrid retries
// a batch for up to 24 hours and documents no limit, and a replayed batch
// changes nothing (its events are kept once: "duplicate").
func verify(key *ecdsa.PublicKey, r *http.Request, body []byte) (receive.Verdict, error) {
	sig64, ts := r.Header.Get(sendGridSignatureHeader), r.Header.Get(sendGridTimestampHeader)
	if sig64 == "" || ts == "" {
		return receive.Verdict{}, receive.Unverified("no %s or %s header", sendGridSignatureHeader, sendGridTimestampHeader)
	}
	sig, err := base64.StdEncoding.DecodeString(sig64)
	if err != nil {
		return receive.Verdict{}, receive.Refused("signature is not base64")
	}
	h := sha256.New()
	h.Write([]byte(ts))
	h.Write(body)
	if !ecdsa.VerifyASN1(key, h.Sum(nil), sig) {
		return receive.Verdict{}, receive.Refused("signature does not verify")
	}
	return receive.Verdict{Events: body}, nil
}
