package message

import (
	"scan/internal/notice"
	"testing"
	"time"
)

// BenchmarkRenderTemplates measures the template half of Render: the
// cached lookup of the kind's and locale's templates, the CLDR-formatted
// data and the three executions, without MIME assembly. Compare
// BenchmarkRender for the whole message.
func BenchmarkRenderTemplates(b *testing.B) {
	r, err := NewRenderer(RenderConfig{From: "Example Box <notices@example.com>", MessageIDDomain: "notices.example.com"})
	if err != nil {
		b.Fatal(err)
	}
	vienna, err := time.LoadLocation("Europe/Vienna")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		n    notice.Notice
	}{
		{"en-US", notice.Notice{Locale: "en-US", Amount: "12.99", Currency: "USD", Interval: "month", IntervalCount: 1}},
		{"de-AT", notice.Notice{Locale: "de-AT", Amount: "1234.5", Currency: "EUR", Interval: "month", IntervalCount: 3, TimeZone: vienna}},
		{"no locale, no amount", notice.Notice{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			n := tc.n
			n.Kind, n.Name, n.Plan, n.CancelToken = "renewal_notice_t72", "Ada Lovelace", "Pro", "tok-1"
			n.PeriodStart = time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
			n.RenewsAt = time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC)
			b.ReportAllocs()
			for b.Loop() {
				sc := r.scratch()
				if _, _, _, err := r.execute(sc, &n); err != nil {
					b.Fatal(err)
				}
				r.release(sc)
			}
		})
	}
}

// A CLDR long date is a function of the calendar date alone, so the
// cache by (year, month, day) gives what the translator gives, in every
// locale shipped, at any time of day, in any zone.
func TestLongDateCache(t *testing.T) {
	t.Parallel()
	zones := []*time.Location{time.UTC, time.FixedZone("east", 14*3600), time.FixedZone("west", -12*3600)}
	for name, mk := range cldrDates {
		tr := mk()
		f := &localeFormat{dates: tr}
		for i := range 400 {
			at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 37 * time.Hour).In(zones[i%len(zones)])
			for range 2 { // once formatted, once from the cache
				if got, want := f.date(at), tr.FmtDateLong(at); got != want {
					t.Fatalf("%s: date(%v) = %q, want %q", name, at, got, want)
				}
			}
		}
	}
}
