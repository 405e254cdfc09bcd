package send

import (
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
		n    Notice
	}{
		{"en-US", Notice{Locale: "en-US", Amount: "12.99", Currency: "USD", Interval: "month", IntervalCount: 1}},
		{"de-AT", Notice{Locale: "de-AT", Amount: "1234.5", Currency: "EUR", Interval: "month", IntervalCount: 3, TimeZone: vienna}},
		{"no locale, no amount", Notice{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			n := tc.n
			n.Kind, n.Name, n.Plan, n.CancelToken = "renewal_notice_t72", "Ada Lovelace", "Pro", "tok-1"
			n.PeriodStart = time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
			n.RenewsAt = time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := r.execute(&n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
