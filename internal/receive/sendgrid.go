package receive

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
)

// The headers of SendGrid's signed Event Webhook.
const (
	sendGridSignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	sendGridTimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// parseSendGridKey reads the verification key as SendGrid shows it: the
// base64 of the DER (PKIX) encoding of an ECDSA P-256 public key
// (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features,
// "Signed Event Webhook Requests"). A PEM block is taken too.
func parseSendGridKey(s string) (*ecdsa.PublicKey, error) {
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

// verifySendGrid checks the signed Event Webhook: the signature header is
// the base64 of an ASN.1 DER ECDSA signature over SHA-256 of the
// timestamp header followed by the raw body, by the account's P-256 key
// (the security-features page above; SendGrid's own Go helper does the
// same, github.com/sendgrid/sendgrid-go helpers/eventwebhook
// VerifySignature). The timestamp's age is not limited: SendGrid retries
// a batch for up to 24 hours and documents no limit, and a replayed batch
// changes nothing (its events are kept once: "duplicate").
func (s *Server) verifySendGrid(r *http.Request, body []byte) (verdict, error) {
	sig64, ts := r.Header.Get(sendGridSignatureHeader), r.Header.Get(sendGridTimestampHeader)
	if sig64 == "" || ts == "" {
		return verdict{}, unverified("no %s or %s header", sendGridSignatureHeader, sendGridTimestampHeader)
	}
	sig, err := base64.StdEncoding.DecodeString(sig64)
	if err != nil {
		return verdict{}, refused("signature is not base64")
	}
	h := sha256.New()
	h.Write([]byte(ts))
	h.Write(body)
	if !ecdsa.VerifyASN1(s.sendgrid, h.Sum(nil), sig) {
		return verdict{}, refused("signature does not verify")
	}
	return verdict{events: body}, nil
}
