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
		{"Inf", "", reasonInvalidAmount},
		{"0x1p-2", "", reasonInvalidAmount},
		{"1e999999999", "", reasonInvalidAmount},
		{"2e15", "", reasonInvalidAmount},
	} {
		in := tc.in
		var n notice.Notice
		reason := c.fillCharge(subscription.Row{Amount: &in, Currency: &eur}, &n)
		if reason != tc.reason || n.Amount != tc.amount {
			t.Errorf("amount %q: %q %q, want %q %q", tc.in, n.Amount, reason, tc.amount, tc.reason)
		}
	}
}

// FuzzContentFill: whatever a row's amount, currency, interval, locale and
// zone say, fill never panics, and either refuses the row with a reason or
// fills what the renderer may trust: a plain non-negative decimal with an
// upper-case ISO 4217 code, a known interval counted from 1, a canonical
// BCP 47 tag and a loaded zone (the defaults when the row's were bad).
func FuzzContentFill(f *testing.F) {
	f.Add("12.99", "eur", "month", "1", "de-AT", "Europe/Vienna")
	f.Add("-1", "XYZ", "fortnight", "0", "klingon!", "Mars/Base")
	f.Add("1e+06", "", "", "", "", "Local")
	f.Add("", "usd", "YEAR", "12", "en_us", "../../etc/passwd")
	pol, err := policy.Parse(strings.NewReader(""))
	if err != nil {
		f.Fatal(err)
	}
	k, _ := pol.Kind("renewal_notice_t72")
	f.Fuzz(func(t *testing.T, amount, cur, interval, count, locale, zone string) {
		c, err := newContent(pol, time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC), nil)
		if err != nil {
			t.Fatal(err)
		}
		r := subscription.Row{Amount: &amount, Currency: &cur, Interval: &interval, IntervalCount: &count, Locale: &locale, TimeZone: &zone}
		var n notice.Notice
		reason, _ := c.fill(r, k, &n)
		if reason != "" {
			return
		}
		if n.Amount != "" {
			if neg, ok := plainDecimal(n.Amount); !ok || neg || strings.HasPrefix(n.Amount, "-") {
				t.Fatalf("amount %q filled as %q", amount, n.Amount)
			}
			if len(n.Currency) != 3 || strings.ToUpper(n.Currency) != n.Currency {
				t.Fatalf("amount %q with currency %q", n.Amount, n.Currency)
			}
		}
		if n.Interval != "" && (!validInterval(n.Interval) || n.IntervalCount < 1) {
			t.Fatalf("interval %q x %d", n.Interval, n.IntervalCount)
		}
		if n.Locale == "" || n.TimeZone == nil || n.TimeZone.String() == "Local" {
			t.Fatalf("locale %q, zone %v", n.Locale, n.TimeZone)
		}
	})
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
		if got := c.deliverBy(vienna, tc.closes); !got.Equal(tc.want) {
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
	if got := none.deliverBy(vienna, now.Add(48*time.Hour)); !got.Equal(now.Add(48 * time.Hour)) {
		t.Errorf("no quiet hours: deliver by %v", got)
	}
}
