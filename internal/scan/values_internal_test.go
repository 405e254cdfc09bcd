package scan

import (
	"strings"
	"testing"
	"time"

	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/subscription"
)

// BenchmarkContentFill is the per-notice cost of reading what a notice
// says: a full row (amount, currency, interval, locale, zone) of a
// jurisdiction that requires the amount, and quiet hours to check.
func BenchmarkContentFill(b *testing.B) {
	pol, err := policy.Parse(strings.NewReader(`
schedule: "0 * * * *"
quiet_hours: {from: "21:00", to: "08:00"}
notices: [{kind: k, open_before: 30d, close_before: 16d}]
legal: {US-CA: {min_lead: 15d, max_lead: 45d, requires: [amount]}}
`))
	if err != nil {
		b.Fatal(err)
	}
	sched, _ := policy.ParseSchedule(pol.Schedule)
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	c, err := newContent(pol, now, sched)
	if err != nil {
		b.Fatal(err)
	}
	s := func(v string) *string { return &v }
	r := subscription.Row{Jurisdiction: s("US-CA"), Amount: s("12.99"), Currency: s("usd"), Interval: s("month"),
		IntervalCount: s("1"), Locale: s("de-AT"), TimeZone: s("Europe/Vienna")}
	k, _ := pol.Kind("k")
	b.ReportAllocs()
	for b.Loop() {
		var n notice.Notice
		if reason, _ := c.Fill(r, k, &n); reason != "" {
			b.Fatal(reason)
		}
		c.Defers(n.TimeZone, now.Add(20*24*time.Hour))
	}
}

// A text may arrive until the window closes or the recipient's quiet
// hours begin, whichever comes first (issue 36).
func TestDeliverBy(t *testing.T) {
	t.Parallel()
	pol, err := policy.Parse(strings.NewReader(`
schedule: "0 * * * *"
quiet_hours: {from: "21:00", to: "08:00"}
notices: [{kind: k, open_before: 30d, close_before: 16d}]
`))
	if err != nil {
		t.Fatal(err)
	}
	sched, _ := policy.ParseSchedule(pol.Schedule)
	vienna, _ := time.LoadLocation("Europe/Vienna")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, vienna) // noon in Vienna
	c, err := newContent(pol, now.UTC(), sched)
	if err != nil {
		t.Fatal(err)
	}
	nine := time.Date(2026, 11, 30, 21, 0, 0, 0, vienna)
	for _, tc := range []struct{ closes, want time.Time }{
		{now.Add(2 * time.Hour), now.Add(2 * time.Hour)}, // the window first
		{now.Add(48 * time.Hour), nine},                  // the quiet hours first
	} {
		if got := c.DeliverBy(vienna, tc.closes); !got.Equal(tc.want) {
			t.Errorf("closes %v: deliver by %v, want %v", tc.closes, got, tc.want)
		}
	}
	quietless, err := policy.Parse(strings.NewReader(`
schedule: "0 * * * *"
notices: [{kind: k, open_before: 30d, close_before: 16d}]
`))
	if err != nil {
		t.Fatal(err)
	}
	none, err := newContent(quietless, now.UTC(), sched)
	if err != nil {
		t.Fatal(err)
	}
	if got := none.DeliverBy(vienna, now.Add(48*time.Hour)); !got.Equal(now.Add(48 * time.Hour)) {
		t.Errorf("no quiet hours: deliver by %v", got)
	}
}
