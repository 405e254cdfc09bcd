// Package ses is Amazon SES, with the Amazon SNS topics its events are
// published to: everything scan knows of it. Its event mapping (Decode:
// SES event records, bare or in an SNS notification, as webhooks,
// Firehose and SQS deliver them), its webhook (an SNS HTTPS subscription,
// verified by SNS's signature: Webhook) and its sender (the SESv2 API:
// NewSender) live here; SES has no API that tells what became of one
// message, so it has no asker.
//
// What its events prove (Decode): Send, Delivery, DeliveryDelay,
// Complaint, Open, Click and a Transient or Undetermined Bounce: sent. A
// Permanent Bounce: failed. Reject (SES refused it, nothing left): retry.
package ses

import "scan/internal/provider"

// Name is the provider's name.
const Name = provider.SES

// NoAsker is why `--ask ses` is refused: SES has no API that answers for
// one message.
const NoAsker = "Amazon SES has no API that tells what became of one message: settle SES claims from its events (--sqs QUEUE_URL, --events FILE --format ses, or scan receive)"
