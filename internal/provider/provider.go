// Package provider names the providers a notice goes through: the email
// providers whose events settle a notice (SES, SendGrid, Mailgun,
// Postmark) and the sms provider (Twilio). A name is one word, the same
// wherever an operator writes it (the policy's provider, `scan reconcile
// --format` and `--ask`, the receiver's paths) and wherever it is read
// back (a metric's provider label, an event's "provider:type" name).
//
// It is a leaf: it imports nothing, so that the policy, the senders, the
// readers of provider events and the metrics can all take the names from
// here. Everything else about a provider is in its own package below
// (internal/provider/ses, sendgrid, mailgun, postmark, twilio), and the
// registry (internal/provider/registry) lists them; see
// docs/providers-architecture.md.
package provider

// Name is a provider's name. The zero value names no provider.
type Name string

// The providers.
const (
	// None is the policy's provider when no provider stands behind the
	// sender (plain SMTP, the outbox, an HTTP endpoint): messages carry
	// no provider's correlation header.
	None     Name = "none"
	SES      Name = "ses"      // Amazon SES
	SendGrid Name = "sendgrid" // Twilio SendGrid
	Mailgun  Name = "mailgun"  // Mailgun
	Postmark Name = "postmark" // Postmark
	Twilio   Name = "twilio"   // Twilio Programmable Messaging (sms)
)

// Email lists the email providers, in the order the documentation gives
// them: each has an event format (its package's Decode) and an endpoint of
// `scan receive` (its Webhook).
var Email = []Name{SES, SendGrid, Mailgun, Postmark}

// Strings returns names as strings, in their order, for a usage message,
// a list of label values or a lookup among strings.
func Strings(names ...Name) []string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return s
}
