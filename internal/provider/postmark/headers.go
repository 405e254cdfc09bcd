package postmark

import (
	"strconv"

	"scan/internal/notice"
)

// CorrelationHeaders are the headers that make Postmark echo the notice's
// key and attempt (0 is written as 1) in its events:
// X-PM-Metadata-notice_key: KEY and X-PM-Metadata-notice_attempt: N
// (events: Metadata.notice_key, Metadata.notice_attempt;
// https://postmarkapp.com/support/article/1125-custom-metadata-faq).
func CorrelationHeaders(key string, attempt int, _ string) [][2]string {
	return [][2]string{{"X-PM-Metadata-" + notice.KeyField, key}, {"X-PM-Metadata-" + notice.AttemptField, strconv.Itoa(max(attempt, 1))}}
}
