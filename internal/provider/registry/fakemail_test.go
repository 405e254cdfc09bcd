package registry_test

// This file is an exercise: a provider added the way the registry's
// documentation says, as if it were a package of its own
// (internal/provider/fakemail), with everything about it here and
// nothing about it anywhere else but its one registry line
// (TestAddedProvider). Its parts are those of a real provider: a sender,
// a webhook with its verification, and the mapping of its events into
// ledger settlements.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/provider"
	"scan/internal/receive"
	"scan/internal/reconcile"
	"scan/internal/send"
)

// fakemailName is the provider's name: its route /events/fakemail and its
// event format.
const fakemailName provider.Name = "fakemail"

// fakemailSecretVar is the setting that holds the webhook's secret.
const fakemailSecretVar = "FAKEMAIL_WEBHOOK_SECRET"

// fakemailSignatureHeader carries the hex HMAC-SHA256 of the body.
const fakemailSignatureHeader = "X-Fakemail-Signature"

// fakemailSender is its sender: it accepts every message and names it by
// an id of its own, keeping what it accepted.
type fakemailSender struct {
	mu       sync.Mutex
	accepted map[string]string // key -> provider id
}

var _ send.Sender = (*fakemailSender)(nil)

func (s *fakemailSender) Send(ctx context.Context, m *send.Message) (send.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return send.Receipt{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accepted == nil {
		s.accepted = map[string]string{}
	}
	id := "fm-" + m.Notice.Key[:12]
	s.accepted[m.Notice.Key] = id
	return send.Receipt{ProviderID: id}, nil
}

func (s *fakemailSender) Close() error { return nil }

// fakemailEvent is one event as the provider posts it.
type fakemailEvent struct {
	Type    string `json:"fm_type"`
	ID      string `json:"fm_id"`
	Key     string `json:"notice_key"`
	Attempt int    `json:"notice_attempt"`
	At      int64  `json:"fm_at"`
}

// fakemailDecode is its event mapping: delivered is sent, bounced failed,
// anything else irrelevant.
func fakemailDecode(payload []byte) (ledger.Settlement, error) {
	var e fakemailEvent
	if err := reconcile.Object(payload, &e); err != nil {
		return ledger.Settlement{}, err
	}
	if e.Type == "" {
		return ledger.Settlement{}, reconcile.ErrNoEvent
	}
	s := ledger.Settlement{Key: e.Key, Attempt: e.Attempt, ProviderID: e.ID, Event: reconcile.EventName(fakemailName, e.Type),
		Kind: ledger.KindOther, At: time.Unix(e.At, 0).UTC()}
	switch reconcile.Lower(e.Type) {
	case "delivered":
		s.To, s.Kind = ledger.Sent, ledger.KindDelivered
	case "bounced":
		s.To, s.Kind = ledger.Failed, ledger.KindBounceHard
	}
	return s, nil
}

// fakemailWebhook is its endpoint of `scan receive`, verified by the
// HMAC of the body under the secret in fakemailSecretVar.
func fakemailWebhook(getenv func(string) string) (receive.Endpoint, error) {
	ep := receive.Endpoint{Name: string(fakemailName), Limit: 64 << 10}
	secret := getenv(fakemailSecretVar)
	if secret == "" {
		return ep, nil
	}
	ep.Verify = func(r *http.Request, body []byte, _ time.Time, _ zerolog.Logger) (receive.Verdict, error) {
		sig := r.Header.Get(fakemailSignatureHeader)
		if sig == "" {
			return receive.Verdict{}, receive.Unverified("no %s header", fakemailSignatureHeader)
		}
		want, err := hex.DecodeString(sig)
		if err != nil || !hmac.Equal(want, fakemailSign(secret, body)) {
			return receive.Verdict{}, receive.Refused("signature does not verify")
		}
		return receive.Verdict{Events: body}, nil
	}
	return ep, nil
}

func fakemailSign(secret string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return mac.Sum(nil)
}

// fakemailPayload is an event of type typ of the message the sender
// accepted as id for key.
func fakemailPayload(typ, id, key string, at time.Time) []byte {
	b, _ := json.Marshal(fakemailEvent{Type: typ, ID: id, Key: key, Attempt: 1, At: at.Unix()})
	return b
}
