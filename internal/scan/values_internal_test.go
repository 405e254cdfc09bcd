package scan

import (
	"strings"
	"testing"
	"time"

	"scan/internal/policy"
	"scan/internal/send"
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
	r := sourceRow{Jurisdiction: s("US-CA"), Amount: s("12.99"), Currency: s("usd"), Interval: s("month"),
		IntervalCount: s("1"), Locale: s("de-AT"), TimeZone: s("Europe/Vienna")}
	k, _ := pol.Kind("k")
	b.ReportAllocs()
	for b.Loop() {
		var n send.Notice
		if reason, _ := c.fill(r, k, &n); reason != "" {
			b.Fatal(reason)
		}
		c.defers(n.TimeZone, now.Add(20*24*time.Hour))
	}
}

func TestAmounts(t *testing.T) {
	t.Parallel()
	pol, err := policy.Parse(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	c, err := newContent(pol, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	eur := "EUR"
	for _, tc := range []struct{ in, amount, reason string }{
		{"12.99", "12.99", ""},
		{"+12.99", "12.99", ""},
		{"0", "0", ""},
		{"-0.00", "0.00", ""},
		{"-0.01", "", reasonNegativeAmount},
		{"1e+06", "1000000", ""},
		{"1.5e-1", "0.15", ""},
		{".5", "0.5", ""},
		{"-1e2", "", reasonNegativeAmount},
		{"12.", "12", ""},
		{"twelve", "", reasonInvalidAmount},
		{"1.2.3", "", reasonInvalidAmount},
		{"NaN", "", reasonInvalidAmount},
	} {
		in := tc.in
		var n send.Notice
		reason := c.fillCharge(sourceRow{Amount: &in, Currency: &eur}, &n)
		if reason != tc.reason || n.Amount != tc.amount {
			t.Errorf("amount %q: %q %q, want %q %q", tc.in, n.Amount, reason, tc.amount, tc.reason)
		}
	}
}
