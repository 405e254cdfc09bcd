package twilio

// Twilio's error codes that decide an outcome, each from its page of the
// error reference, https://www.twilio.com/docs/api/errors/<code>.

// retryable are codes of a create that Twilio refused for now, before
// taking the message: a later attempt may succeed.
var retryable = map[int]string{
	20429: "Too Many Requests",            // the account's concurrency limit
	14107: "SMS send rate limit exceeded", // the sender's rate
	21611: "This 'From' number has exceeded the maximum number of queued messages",
	30001: "Queue overflow",                        // Twilio's queue for the sender is full
	20500: "An internal server error has occurred", // before the Message existed (an answer, not a lost one)
	20503: "Service unavailable",
}

// permanent are codes of a create that no retry of the same request
// changes: the number, the recipient's choice or the account's
// permissions.
var permanent = map[int]string{
	21211: "Invalid 'To' Phone Number",
	21214: "'To' phone number cannot be reached",
	21217: "Phone number does not appear to be valid",
	21401: "Invalid Phone Number",
	21407: "This Phone Number type does not support SMS or MMS",
	21408: "Permission to send an SMS has not been enabled for the region indicated by the 'To' number",
	21606: "The 'From' phone number provided is not a valid message-capable Twilio phone number for this destination/account",
	21608: "The 'to' phone number provided is not yet verified for this account", // trial accounts
	21610: "Attempt to send to unsubscribed recipient",                           // the recipient replied STOP
	21612: "The 'To' phone number is not currently reachable via SMS",
	21614: "'To' number is not a valid mobile number",
	21635: "'To' number cannot be a landline",
}

// Unsubscribed is Twilio's code for a recipient who replied STOP to the
// sender (21610): the number goes on scan's suppression list.
const Unsubscribed = 21610

// hardUndelivered are codes of an undelivered or failed Message (a status
// callback) that say the number does not take SMS: the sms channel's hard
// bounce, which suppresses the number.
var hardUndelivered = map[int]string{
	30005: "Unknown destination handset",
	30006: "Landline or unreachable carrier",
	21211: permanent[21211],
	21614: permanent[21614],
	21635: permanent[21635],
}

// Retryable reports whether a create refused with code may be tried again.
func Retryable(code int) bool { _, ok := retryable[code]; return ok }

// Permanent reports whether code is a permanent refusal of a create.
func Permanent(code int) bool { _, ok := permanent[code]; return ok }
