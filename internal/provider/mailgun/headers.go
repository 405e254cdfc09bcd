package mailgun

import (
	"strconv"

	"scan/internal/notice"
)

// CorrelationHeaders are the headers that make Mailgun echo the notice's
// key and attempt (0 is written as 1) in its events: X-Mailgun-Variables:
// {"notice_key":"KEY","notice_attempt":"N"} (events: their
// user-variables). key is hex, so no value holds a line break or a quote.
func CorrelationHeaders(key string, attempt int, _ string) [][2]string {
	n := strconv.Itoa(max(attempt, 1))
	return [][2]string{{"X-Mailgun-Variables", `{"` + notice.KeyField + `":"` + key + `","` + notice.AttemptField + `":"` + n + `"}`}}
}
