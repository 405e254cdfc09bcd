// Package mailgun is Mailgun: everything scan knows of it. Its event
// mapping (Decode: webhook bodies {"signature":..., "event-data":...}),
// its webhook (signed with the webhook signing key: Webhook) and its pull
// API for --ask (the Events API: NewAsker) live here; messages go to it
// over SMTP.
//
// What its events prove (Decode): accepted, delivered, opened, clicked,
// complained and a temporary failure: sent. A permanent failure: failed
// (also when its reason is a suppression, suppress-bounce, ...: Mailgun
// dropped it before sending, and would again). A failure of severity
// internal (Mailgun never sent it and does not retry): retry. rejected:
// retry. user-variables that are not an object ([] for a message without
// variables) hold no key.
package mailgun

import "scan/internal/provider"

// Name is the provider's name.
const Name = provider.Mailgun
