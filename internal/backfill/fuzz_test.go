package backfill_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"scan/internal/backfill"
	"scan/internal/notice"
)

// FuzzRead checks that Read never panics, and either refuses the file with
// a one-line *backfill.LineError at a line that exists, or returns records
// that are each valid and distinct, in file order. The seed corpus is in
// testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	f.Add("subscription_id,period_start,kind,revision,sent_at\ns1,2026-12-01,renewal_notice_t72,0,2026-11-28T09:00:00Z\n")
	f.Add("s1,2026-12-01,renewal_notice_t72,,2026-11-28T09:00:00Z\r\n\"s,2\",2026-12-01,k,1,2026-11-28T09:00:00+02:00")
	f.Fuzz(func(t *testing.T, in string) {
		recs, err := backfill.Read(strings.NewReader(in))
		if err != nil {
			var le *backfill.LineError
			if !errors.As(err, &le) {
				t.Fatalf("error %v (%T) is not a *LineError", err, err)
			}
			if le.Line < 1 || le.Line > strings.Count(in, "\n")+1 {
				t.Fatalf("error at line %d of a %d-line file", le.Line, strings.Count(in, "\n")+1)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			if recs != nil {
				t.Fatalf("records returned with an error")
			}
			return
		}
		seen := map[string]bool{}
		last := 0
		for _, r := range recs {
			if r.Line <= last {
				t.Fatalf("record at line %d after line %d", r.Line, last)
			}
			last = r.Line
			if r.SubscriptionID == "" || len(r.SubscriptionID) > notice.MaxSubscriptionIDLen || r.SubscriptionID != strings.TrimSpace(r.SubscriptionID) {
				t.Fatalf("line %d: subscription id %q", r.Line, r.SubscriptionID)
			}
			if err := notice.ValidateKind(r.Kind); err != nil {
				t.Fatalf("line %d: kind %q: %v", r.Line, r.Kind, err)
			}
			if r.Revision < 0 || r.PeriodStart.IsZero() || r.SentAt.IsZero() {
				t.Fatalf("line %d: record %+v", r.Line, r)
			}
			if r.PeriodStart.Location() != time.UTC || r.PeriodStart.Format(notice.DateLayout)+"T00:00:00Z" != r.PeriodStart.Format(time.RFC3339) {
				t.Fatalf("line %d: period_start %v is not a date", r.Line, r.PeriodStart)
			}
			tuple := r.SubscriptionID + "\x00" + r.PeriodStart.Format(notice.DateLayout) + "\x00" + r.Kind + "\x00" + strconv.Itoa(r.Revision)
			if seen[tuple] {
				t.Fatalf("line %d: the same notice twice", r.Line)
			}
			seen[tuple] = true
		}
	})
}
