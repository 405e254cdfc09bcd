package subscription

import (
	"strings"
	"testing"

	"scan/internal/notice"
	"scan/internal/policy"
)

func TestAmounts(t *testing.T) {
	t.Parallel()
	pol, err := policy.Parse(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewContent(pol)
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
		reason := c.fillCharge(Row{Amount: &in, Currency: &eur}, &n)
		if reason != tc.reason || n.Amount != tc.amount {
			t.Errorf("amount %q: %q %q, want %q %q", tc.in, n.Amount, reason, tc.amount, tc.reason)
		}
	}
}

// FuzzContentFill: whatever a row's amount, currency, interval, locale and
// zone say, Fill never panics, and either refuses the row with a reason or
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
		c, err := NewContent(pol)
		if err != nil {
			t.Fatal(err)
		}
		r := Row{Amount: &amount, Currency: &cur, Interval: &interval, IntervalCount: &count, Locale: &locale, TimeZone: &zone}
		var n notice.Notice
		reason, _ := c.Fill(r, k, &n)
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
