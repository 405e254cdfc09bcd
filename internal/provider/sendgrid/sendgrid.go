// Package sendgrid is Twilio SendGrid: everything scan knows of it. Its
// event mapping (Decode: the Event Webhook's event objects), its webhook
// (the signed Event Webhook: Webhook) and its pull API for --ask (the
// Email Logs API: NewAsker) live here; messages go to it over SMTP.
//
// What its events prove (Decode): processed, delivered, deferred, open,
// click, spamreport and a "blocked" bounce: sent. A bounce of type
// "bounce": failed. dropped (never sent): failed when its reason names a
// suppression list, else retry (notSent). sg_message_id is matched
// without its suffix (from ".recvd-..." or ".filter..."); an asynchronous
// bounce, which carries neither the key nor sg_message_id, by its smtp-id
// (our Message-ID).
package sendgrid

import "scan/internal/provider"

// Name is the provider's name.
const Name = provider.SendGrid
