package notice

import (
	"strings"
	"unicode"
)

// KeyField is the name under which every provider echoes the notice key
// in its events: an SES message tag, a SendGrid unique argument, a
// Mailgun user variable, a Postmark metadata field. Each provider's
// package writes it into the message (its CorrelationHeaders, which the
// renderer adds; SES's sender also into its tags) and reads it back from
// its events (its Decode).
const KeyField = "notice_key"

// AttemptField is the name under which every provider echoes the attempt
// number beside KeyField, so that an event settles only its attempt. Not
// "attempt": SendGrid's deferred and bounce events carry their own
// "attempt" (delivery tries) at the top level, where unique arguments go.
const AttemptField = "notice_attempt"

// MessageIDKeyLen is how many characters of a notice's key the local part
// of its Message-ID carries (MessageID): 128 bits of the HMAC, enough to
// name one notice, short enough for any mail system's Message-ID.
const MessageIDKeyLen = 32

// MessageID returns the Message-ID of the notice with key key at domain
// (the policy's message_id_domain), without angle brackets: the first
// MessageIDKeyLen characters of key, "@", domain. It is the form the
// ledger stores and matches (BareMessageID); the message's header carries
// it between angle brackets.
func MessageID(key, domain string) string {
	if len(key) > MessageIDKeyLen {
		key = key[:MessageIDKeyLen]
	}
	return key + "@" + domain
}

// BareMessageID returns the Message-ID s without the angle brackets and
// white space around it, the form the ledger stores and matches:
// "<abc@n.example.com>" and " <abc@n.example.com>\r\n" are both
// "abc@n.example.com". An id without brackets is returned as it is.
func BareMessageID(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r == '<' || r == '>' || unicode.IsSpace(r) })
}
