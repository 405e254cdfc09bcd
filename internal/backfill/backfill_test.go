package backfill_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"scan/internal/backfill"
)

func TestReadValid(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"header":    "subscription_id,period_start,kind,revision,sent_at\n",
		"no header": "",
		"BOM":       "\uFEFFsubscription_id,period_start,kind,revision,sent_at\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in += "sub_1,2026-12-01,renewal_notice_t72,0,2026-11-29T09:00:00Z\n" +
				" sub_2 , 2026-12-01 ,renewal_notice_t72,,2026-11-29T10:00:00+01:00\n" +
				"sub_1,2026-12-01,renewal_notice_t72,1,2026-11-30T09:00:00Z"
			recs, err := backfill.Read(strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 3 {
				t.Fatalf("got %d records: %+v", len(recs), recs)
			}
			first := 1
			if name != "no header" {
				first = 2
			}
			r := recs[1]
			if r.Line != first+1 || r.SubscriptionID != "sub_2" || r.Revision != 0 || r.Kind != "renewal_notice_t72" ||
				!r.PeriodStart.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) ||
				!r.SentAt.Equal(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)) {
				t.Fatalf("record = %+v", r)
			}
			if recs[2].Revision != 1 {
				t.Fatalf("revision = %d", recs[2].Revision)
			}
		})
	}
}

func TestReadEmpty(t *testing.T) {
	t.Parallel()
	recs, err := backfill.Read(strings.NewReader(""))
	if err != nil || len(recs) != 0 {
		t.Fatalf("%v %v", recs, err)
	}
}

// A notice sent twice is one record, with its first send's time.
func TestReadMergesRepeatedNotices(t *testing.T) {
	t.Parallel()
	in := "sub_1,2026-12-01,renewal_notice_t72,0,2026-11-29T09:00:00Z\n" +
		"sub_2,2026-12-01,renewal_notice_t72,0,2026-11-29T09:00:00Z\n" +
		"sub_1,2026-12-01,renewal_notice_t72,,2026-11-28T09:00:00Z\n" +
		"sub_1,2026-12-01,renewal_notice_t72,1,2026-11-30T09:00:00Z\n"
	recs, err := backfill.Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].SubscriptionID != "sub_1" || recs[0].Line != 1 || !recs[0].SentAt.Equal(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("records = %+v", recs)
	}
	sends, err := backfill.ReadSends(strings.NewReader(in))
	if err != nil || len(sends) != 4 {
		t.Fatalf("sends = %d, %v", len(sends), err)
	}
	legacy, err := backfill.LegacySends(strings.NewReader(in))
	if err != nil || len(legacy) != len(sends) {
		t.Fatalf("legacy sends = %d, %v", len(legacy), err)
	}
	for i, l := range legacy {
		if l.Tuple != sends[i].Tuple || !l.SentAt.Equal(sends[i].SentAt) {
			t.Errorf("legacy send %d = %+v, want %+v", i, l, sends[i])
		}
	}
}

// Every bad line rejects the file with its line number (the header is
// line 1); none panics.
func TestReadRejects(t *testing.T) {
	t.Parallel()
	const ok = "sub_1,2026-12-01,renewal_notice_t72,0,2026-11-29T09:00:00Z\n"
	cases := map[string]struct {
		line string
		want string
	}{
		"too few fields":    {"sub_2,2026-12-01,renewal_notice_t72,0\n", "want 5 fields"},
		"too many fields":   {"sub_2,2026-12-01,renewal_notice_t72,0,2026-11-29T09:00:00Z,x\n", "want 5 fields"},
		"empty id":          {" ,2026-12-01,renewal_notice_t72,0,2026-11-29T09:00:00Z\n", "subscription_id"},
		"long id":           {strings.Repeat("x", 256) + ",2026-12-01,renewal_notice_t72,0,2026-11-29T09:00:00Z\n", "subscription_id"},
		"bad period":        {"sub_2,01/12/2026,renewal_notice_t72,0,2026-11-29T09:00:00Z\n", "period_start"},
		"bad kind":          {"sub_2,2026-12-01,renewal|t72,0,2026-11-29T09:00:00Z\n", "kind"},
		"empty kind":        {"sub_2,2026-12-01,,0,2026-11-29T09:00:00Z\n", "kind"},
		"negative revision": {"sub_2,2026-12-01,renewal_notice_t72,-1,2026-11-29T09:00:00Z\n", "revision"},
		"text revision":     {"sub_2,2026-12-01,renewal_notice_t72,one,2026-11-29T09:00:00Z\n", "revision"},
		"bad sent_at":       {"sub_2,2026-12-01,renewal_notice_t72,0,yesterday\n", "sent_at"},
		"no zone":           {"sub_2,2026-12-01,renewal_notice_t72,0,2026-11-29 09:00:00\n", "sent_at"},
		"bare quote":        {"sub\"2,2026-12-01,renewal_notice_t72,0,2026-11-29T09:00:00Z\n", "quote"},
		"open quote":        {"\"sub_2,2026-12-01,renewal_notice_t72,0,2026-11-29T09:00:00Z\n", "quote"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := "subscription_id,period_start,kind,revision,sent_at\n" + ok + c.line + ok
			recs, err := backfill.Read(strings.NewReader(in))
			var le *backfill.LineError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v (records %d), want a *LineError", err, len(recs))
			}
			if le.Line != 3 || !strings.Contains(le.Error(), c.want) || !strings.HasPrefix(le.Error(), "line 3: ") {
				t.Fatalf("err = %q (line %d), want line 3 and %q", le, le.Line, c.want)
			}
			if recs != nil {
				t.Fatal("records returned with an error")
			}
		})
	}
}
