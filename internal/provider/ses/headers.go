package ses

import (
	"strconv"

	"scan/internal/notice"
)

// CorrelationHeaders are the headers that make SES echo the notice's key
// and attempt (0 is written as 1) in its events:
// X-SES-MESSAGE-TAGS: notice_key=KEY, notice_attempt=N (events:
// mail.tags.notice_key, mail.tags.notice_attempt), and
// X-SES-CONFIGURATION-SET when configSet is not empty; SES removes both
// before delivery
// (https://docs.aws.amazon.com/ses/latest/dg/event-publishing-send-email.html).
// key is hex and configSet letters, digits, '-' and '_' (the registry
// checks it), so no value holds a line break.
func CorrelationHeaders(key string, attempt int, configSet string) [][2]string {
	hs := [][2]string{{"X-SES-MESSAGE-TAGS", notice.KeyField + "=" + key + ", " + notice.AttemptField + "=" + strconv.Itoa(max(attempt, 1))}}
	if configSet != "" {
		hs = append(hs, [2]string{"X-SES-CONFIGURATION-SET", configSet})
	}
	return hs
}
