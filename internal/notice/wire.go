package notice

import (
	"strings"
	"unicode"
)

// KeyField is the name under which every provider echoes the notice key
// in its events: an SES message tag, a SendGrid unique argument, a
// Mailgun user variable, a Postmark metadata field. Package message writes
// it into the message (message.CorrelationHeaders; package send's SES
// sender into its tags); package reconcile reads it back from the events.
const KeyField = "notice_key"

// AttemptField is the name under which every provider echoes the attempt
// number beside KeyField, so that an event settles only its attempt. Not
// "attempt": SendGrid's deferred and bounce events carry their own
// "attempt" (delivery tries) at the top level, where unique arguments go.
const AttemptField = "notice_attempt"

// BareMessageID returns the Message-ID s without the angle brackets and
// white space around it, the form the ledger stores and matches:
// "<abc@n.example.com>" and " <abc@n.example.com>\r\n" are both
// "abc@n.example.com". An id without brackets is returned as it is.
func BareMessageID(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r == '<' || r == '>' || unicode.IsSpace(r) })
}
