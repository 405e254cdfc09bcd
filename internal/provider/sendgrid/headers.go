package sendgrid

import (
	"strconv"

	"scan/internal/notice"
)

// CorrelationHeaders are the headers that make SendGrid echo the notice's
// key and attempt (0 is written as 1) in its events: X-SMTPAPI:
// {"unique_args":{"notice_key":"KEY","notice_attempt":"N"}} (events: both
// at the top level;
// https://www.twilio.com/docs/sendgrid/for-developers/sending-email/unique-arguments).
// key is hex, so no value holds a line break or a quote.
func CorrelationHeaders(key string, attempt int, _ string) [][2]string {
	n := strconv.Itoa(max(attempt, 1))
	return [][2]string{{"X-SMTPAPI", `{"unique_args":{"` + notice.KeyField + `":"` + key + `","` + notice.AttemptField + `":"` + n + `"}}`}}
}
