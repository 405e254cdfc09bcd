package notice

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"hash"
	"strings"
)

// The channels a notice may go by. An email notice's key is Key's; an sms
// notice's key is ChannelKey's, whose material ends in "|sms".
const (
	ChannelEmail = "email"
	ChannelSMS   = "sms"
)

// ValidChannel reports whether c names a channel.
func ValidChannel(c string) bool { return c == ChannelEmail || c == ChannelSMS }

// ChannelKey returns the key of t's notice by channel: Key(t) for email
// (unchanged), and for any other channel the HMAC of Key's material
// followed by "|" and the channel name.
func (k *Keyer) ChannelKey(t Tuple, channel string) string {
	if channel == "" || channel == ChannelEmail {
		return k.Key(t)
	}
	b := k.material(t)
	b = append(b, '|')
	b = append(b, channel...)
	k.buf = b
	return k.hexMAC(b)
}

// suppressionLabel derives the suppression list's key from the notice
// secret: HMAC-SHA256(secret, suppressionLabel). A derived key, not the
// secret itself, so that a digest of an address can never be mistaken
// for (or collide into) a notice key or a cancellation token, which are
// HMACs of other material under the secret.
const suppressionLabel = "scan suppression list v1"

// AddressHasher computes the digests the suppression list keeps instead
// of addresses: HMAC-SHA256(derived key, channel + "|" + normalized
// address). Build it with NewAddressHasher; it is not safe for concurrent
// use (Clone gives another).
type AddressHasher struct {
	key []byte
	mac hash.Hash
	buf []byte
}

// NewAddressHasher returns an AddressHasher under the key derived from
// secret (at least MinSecretLen bytes).
func NewAddressHasher(secret []byte) (*AddressHasher, error) {
	if len(secret) < MinSecretLen {
		return nil, ErrShortSecret
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(suppressionLabel))
	key := m.Sum(nil)
	return &AddressHasher{key: key, mac: hmac.New(sha256.New, key)}, nil
}

// Clone returns an independent AddressHasher with the same key.
func (h *AddressHasher) Clone() *AddressHasher {
	return &AddressHasher{key: h.key, mac: hmac.New(sha256.New, h.key)}
}

// keyIDLabel is what KeyID MACs under the list's derived key.
const keyIDLabel = "scan suppression key id v1"

// KeyID names the secret the hasher's digests are keyed under: the first 8
// bytes of HMAC-SHA256(derived key, keyIDLabel). The list records it with
// an entry (notice_suppression.key_id) so that an entry still keyed under
// a previous secret can be told apart; it reveals nothing of the secret.
func (h *AddressHasher) KeyID() []byte {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(keyIDLabel))
	return m.Sum(nil)[:8]
}

// Digest returns the 32-byte digest of an address already normalized
// (NormalizeEmail, NormalizePhone) for channel.
func (h *AddressHasher) Digest(channel, normalized string) []byte {
	b := append(h.buf[:0], channel...)
	b = append(b, '|')
	b = append(b, normalized...)
	h.buf = b
	h.mac.Reset()
	h.mac.Write(b)
	return h.mac.Sum(nil)
}

// ErrBadAddress is returned by NormalizeEmail and NormalizePhone.
var ErrBadAddress = errors.New("not a usable address")

// NormalizeEmail returns the form of an email address that the
// suppression list hashes: trimmed and lower-cased whole. Providers treat
// addresses case-insensitively in their lists, and so does this one. It
// checks only that there is one '@' with text on both sides; the pass
// parses addresses fully before it gets here.
func NormalizeEmail(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	at := strings.IndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || strings.Count(s, "@") != 1 || strings.ContainsAny(s, " \t\r\n<>") {
		return "", ErrBadAddress
	}
	return s, nil
}

// NormalizePhone returns a phone number in E.164 (+ then 2 to 15 digits,
// the first not 0), after removing the spaces, dots, dashes and
// parentheses people write between digits. Anything else is ErrBadAddress.
func NormalizePhone(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "+") {
		return "", ErrBadAddress
	}
	b := make([]byte, 0, 16)
	b = append(b, '+')
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			b = append(b, c)
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')':
		default:
			return "", ErrBadAddress
		}
	}
	if n := len(b) - 1; n < 2 || n > 15 || b[1] == '0' {
		return "", ErrBadAddress
	}
	return string(b), nil
}
