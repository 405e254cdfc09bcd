// Package notice derives the identity of a notice: its key (Keyer.Key) and
// the token of its cancellation link (Keyer.CancelToken), and checks and
// shortens keys for logs (ValidKey, Short). Everything here is a pure
// function of the business tuple (subscription, billing period, kind,
// revision) and the secret; nothing that changes between attempts (run,
// time, host, attempt number) enters it. The Message-ID that carries the
// key to the provider is derived from the key here (MessageID); this
// package also names what comes back from the provider (KeyField,
// AttemptField) and reads a Message-ID as the ledger stores it
// (BareMessageID).
package notice

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// MinSecretLen is the shortest NOTICE_KEY_SECRET accepted, in bytes.
const MinSecretLen = 32

// KeyLen is the length of a key: lower-case hex of an HMAC-SHA256.
const KeyLen = 64

// MaxSubscriptionIDLen bounds a subscription id, in bytes.
const MaxSubscriptionIDLen = 255

// DateLayout is how a billing period enters the key.
const DateLayout = "2006-01-02"

// ErrShortSecret is returned by NewKeyer for a secret under MinSecretLen bytes.
var ErrShortSecret = fmt.Errorf("NOTICE_KEY_SECRET must be at least %d bytes", MinSecretLen)

// ErrBadKind is returned for a kind that is empty or contains '|'.
var ErrBadKind = errors.New("notice kind must be non-empty and must not contain '|'")

// Tuple is the business identity of one notice.
type Tuple struct {
	SubscriptionID string
	PeriodStart    time.Time // only the date (YYYY-MM-DD) is used
	Kind           string
	Revision       int
}

// Keyer derives keys with one secret. Its zero value is not usable; build
// one with NewKeyer. A Keyer is not safe for concurrent use (it reuses its
// HMAC state); give each goroutine its own with Clone.
type Keyer struct {
	secret []byte
	mac    hash.Hash
	buf    []byte
	sum    []byte
}

// NewKeyer returns a Keyer for secret, which must be at least MinSecretLen
// bytes. The secret is copied.
func NewKeyer(secret []byte) (*Keyer, error) {
	if len(secret) < MinSecretLen {
		return nil, ErrShortSecret
	}
	s := append([]byte(nil), secret...)
	return &Keyer{secret: s, mac: hmac.New(sha256.New, s), buf: make([]byte, 0, 128), sum: make([]byte, 0, sha256.Size)}, nil
}

// Clone returns an independent Keyer with the same secret.
func (k *Keyer) Clone() *Keyer {
	c, _ := NewKeyer(k.secret)
	return c
}

// Key returns the notice key of t:
//
//	lower-case hex of HMAC-SHA256(secret, id|YYYY-MM-DD|kind|revision)
func (k *Keyer) Key(t Tuple) string {
	return k.hexMAC(k.material(t))
}

func (k *Keyer) material(t Tuple) []byte {
	b := k.buf[:0]
	b = append(b, t.SubscriptionID...)
	b = append(b, '|')
	b = t.PeriodStart.AppendFormat(b, DateLayout)
	b = append(b, '|')
	b = append(b, t.Kind...)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(t.Revision), 10)
	k.buf = b
	return b
}

func (k *Keyer) hexMAC(material []byte) string { return k.hexMACPrefix(material, KeyLen) }

// hexMACPrefix returns the first n (at most KeyLen) characters of the
// lower-case hex of the HMAC of material: one allocation, the string.
func (k *Keyer) hexMACPrefix(material []byte, n int) string {
	k.mac.Reset()
	k.mac.Write(material)
	k.sum = k.mac.Sum(k.sum[:0])
	var h [KeyLen]byte
	hex.Encode(h[:], k.sum)
	return string(h[:n])
}

// CancelToken returns the token of the cancellation link for a notice. It
// is derived from the key of the notice's first revision, so a corrected
// notice (a bumped revision) carries the same link as the one it
// supersedes, and a link already in a customer's inbox keeps working.
func (k *Keyer) CancelToken(t Tuple) string {
	t.Revision = 0
	return k.CancelTokenOf(k.Key(t))
}

// CancelTokenOf returns CancelToken(t) from first, Key(t) of t's first
// revision (Revision 0) under this Keyer's secret: a caller that has just
// derived that key saves deriving it again.
func (k *Keyer) CancelTokenOf(first string) string {
	b := append(k.buf[:0], "cancel|"...)
	b = append(b, first...)
	k.buf = b
	return k.hexMACPrefix(b, 32)
}

// ValidateKind reports whether kind can enter a key.
func ValidateKind(kind string) error {
	if kind == "" || strings.Contains(kind, "|") {
		return ErrBadKind
	}
	return nil
}

// ValidKey reports whether s looks like a notice key (64 lower-case hex).
func ValidKey(s string) bool {
	if len(s) != KeyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Short returns the first 12 characters of a key, the form logs use.
func Short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}
