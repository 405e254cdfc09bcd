// Package postmark is Postmark: everything scan knows of it. Its event
// mapping (Decode: one webhook object per event, by RecordType), its
// webhook (basic auth in the webhook's URL: Webhook) and its pull API for
// --ask (the Messages API: NewAsker) live here; messages go to it over
// SMTP.
//
// What its events prove (Decode): Delivery, Open, Click, SpamComplaint
// and any Bounce but those below: sent. A Bounce of Type HardBounce or
// BadEmailAddress: failed; of Type SMTPApiError (Postmark refused to send
// to a suppressed recipient): failed.
package postmark

import "scan/internal/provider"

// Name is the provider's name.
const Name = provider.Postmark
