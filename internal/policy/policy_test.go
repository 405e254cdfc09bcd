package policy

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"scan/internal/provider"
)

func TestDefaultIsValid(t *testing.T) {
	t.Parallel()
	p := Default()
	k, ok := p.Kind("renewal_notice_t72")
	if !ok || time.Duration(k.OpenBefore) != 72*time.Hour || time.Duration(k.CloseBefore) != 24*time.Hour {
		t.Fatalf("default kind = %+v", k)
	}
	if gap, err := MaxGap(p.Schedule, time.Now()); err != nil || gap != 24*time.Hour {
		t.Fatalf("gap = %s, %v", gap, err)
	}
}

// examplePolicy returns testdata/example.yaml, the README's example policy
// (TestReadmePolicyExample keeps the two equal), with its templates_dir
// pointed at an empty directory that exists.
func examplePolicy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const tmpl = "templates_dir: /etc/scan/templates"
	if !strings.Contains(string(b), tmpl) {
		t.Fatalf("the example has no %q line", tmpl)
	}
	return strings.Replace(string(b), tmpl, "templates_dir: "+t.TempDir(), 1)
}

func TestParseExample(t *testing.T) {
	t.Parallel()
	p, err := Parse(strings.NewReader(strings.Replace(examplePolicy(t), "provider: none", "provider: ses", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Provider != string(provider.SES) || p.SES.ConfigurationSet != "notices" {
		t.Fatalf("provider %q, ses %+v", p.Provider, p.SES)
	}
	if Default().Provider != string(provider.None) {
		t.Fatalf("default provider %q", Default().Provider)
	}
	k, _ := p.Kind("renewal_notice_t72")
	if w := k.WindowFor("US-CA"); time.Duration(w.OpenBefore) != 30*24*time.Hour || time.Duration(w.CloseBefore) != 16*24*time.Hour {
		t.Fatalf("US-CA window = %+v", w)
	}
	if w := k.WindowFor("DE"); time.Duration(w.OpenBefore) != 72*time.Hour {
		t.Fatalf("DE window = %+v", w)
	}
	if p.Rate.For("gmail.com").PerSecond != 20 || p.Rate.For("yahoo.com").PerSecond != 5 {
		t.Fatal("rate buckets")
	}
	// The longest lead is California's 30d; prune keeps at least a month
	// more.
	if p.LongestLead() != 30*24*time.Hour || p.MinRetention() != 61*24*time.Hour {
		t.Fatalf("longest lead %s, shortest retention %s", p.LongestLead(), p.MinRetention())
	}
}

// The demo's policy (scripts/demo-policy.yaml), its own because the demo
// needs rates that take seconds, is a valid policy.
func TestDemoPolicyParses(t *testing.T) {
	t.Parallel()
	if _, err := LoadAt("../../scripts/demo-policy.yaml", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	if got := time.Duration(Default().Retention); got != 400*24*time.Hour {
		t.Fatalf("default retention %s", got)
	}
	p, err := Parse(strings.NewReader("retention: 2y\n"))
	if err == nil {
		t.Fatalf("retention 2y accepted: %s", p.Retention)
	}
	p, err = Parse(strings.NewReader("retention: 90d\n"))
	if err != nil || time.Duration(p.Retention) != 90*24*time.Hour {
		t.Fatalf("retention 90d: %v, %v", p, err)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"closes before it opens", `notices: [{kind: k1, open_before: 24h, close_before: 72h}]`, "kind k1: window closes before it opens"},
		{"outside legal", `
notices:
  - kind: k1
    open_before: 72h
    close_before: 24h
    by_jurisdiction: {US-CA: {open_before: 50d, close_before: 16d}}
legal: {US-CA: {min_lead: 15d, max_lead: 45d}}`, "kind k1, jurisdiction US-CA: window [16d, 50d] before renewal lies outside the legal lead [15d, 45d]"},
		{"default window under a legal floor", `
notices: [{kind: k1, open_before: 72h, close_before: 24h}]
legal: {US-CA: {min_lead: 15d, max_lead: 45d}}`, "kind k1, jurisdiction US-CA"},
		{"narrower than schedule gap", `
schedule: "0 2 * * 1"
notices: [{kind: k1, open_before: 72h, close_before: 24h}]`, "can leave 7d between two passes"},
		{"unknown key", `notices: [{kind: k1, open_befor: 72h, close_before: 24h}]`, "field open_befor not found"},
		{"bad duration", `notices: [{kind: k1, open_before: 3x, close_before: 24h}]`, `invalid duration "3x"`},
		{"zero rate", `rate: {default: {per_second: 0, burst: 5}}`, "rate.default.per_second"},
		{"negative rate", `rate: {global: {per_second: -1, burst: 5}}`, "rate.global.per_second"},
		{"bad cron", `schedule: "61 * * * *"`, "schedule: invalid cron expression"},
		{"pipe in kind", `notices: [{kind: "a|b", open_before: 72h, close_before: 24h}]`, "must not contain '|'"},
		{"concurrency", `concurrency: -3`, "concurrency"},
		{"unknown provider", `provider: sparkpost`, `provider: "sparkpost" is not one of none, ses, sendgrid, mailgun, postmark`},
		{"provider case", `provider: SES`, `provider: "SES" is not one of`},
		{"configuration set", `ses: {configuration_set: "a b"}`, "ses.configuration_set"},
		{"configuration set line break", "ses: {configuration_set: \"a\\r\\nX-Evil: 1\"}", "ses.configuration_set"},
		{"negative retention", `retention: -400d`, "retention: must be positive"},
		{"second document", "concurrency: 4\n---\nconcurrency: 8\n", "line 3: a second YAML document"},
		{"second document, broken", "concurrency: 4\n---\n[\n", "config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(strings.NewReader(tc.yaml))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Document markers around the one document, and an empty second
// document, are accepted.
func TestParseDocumentMarkers(t *testing.T) {
	t.Parallel()
	for _, y := range []string{"---\nconcurrency: 4\n", "concurrency: 4\n---\n", "---\nconcurrency: 4\n...\n", "# only a comment\nconcurrency: 4\n---\n# nothing\n"} {
		p, err := Parse(strings.NewReader(y))
		if err != nil {
			t.Fatalf("%q: %v", y, err)
		}
		if p.Concurrency != 4 {
			t.Fatalf("%q: concurrency %d, want 4", y, p.Concurrency)
		}
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"72h": 72 * time.Hour, "30d": 720 * time.Hour, "1d12h": 36 * time.Hour, "0.5d": 12 * time.Hour, "90m": 90 * time.Minute} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "3x", "1w"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", bad)
		}
	}
}

// A daily 02:30 run in a zone with DST: on the spring-forward day 02:30
// does not exist, and the gap around it is not 24h. The window must cover
// the longest gap, which is only visible over a whole year.
func TestMaxGapSeesDST(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	utc, err := MaxGap("30 2 * * *", from)
	if err != nil || utc != 24*time.Hour {
		t.Fatalf("UTC gap = %v, %v", utc, err)
	}
	ny, err := MaxGap("CRON_TZ=America/New_York 30 2 * * *", from)
	if err != nil {
		t.Fatal(err)
	}
	if ny <= 24*time.Hour {
		t.Fatalf("New York gap = %v, want more than 24h (DST)", ny)
	}
	if _, err := Parse(strings.NewReader("schedule: \"CRON_TZ=America/New_York 30 2 * * *\"\nnotices: [{kind: k, open_before: 48h, close_before: 24h}]")); err == nil {
		t.Fatal("a 24h window under a schedule with a DST gap over 24h must be refused")
	}
}

func TestWindowContainsBoundaries(t *testing.T) {
	t.Parallel()
	w := Window{OpenBefore: Duration(72 * time.Hour), CloseBefore: Duration(24 * time.Hour)}
	renews := time.Date(2026, 12, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		now  time.Time
		want bool
	}{
		{renews.Add(-72 * time.Hour), true},                  // exactly at open
		{renews.Add(-72*time.Hour - time.Nanosecond), false}, // just before open
		{renews.Add(-24 * time.Hour), false},                 // exactly at close
		{renews.Add(-24*time.Hour - time.Nanosecond), true},  // just before close
		{renews.Add(-48 * time.Hour), true},
	} {
		if got := w.Contains(renews, tc.now, time.UTC); got != tc.want {
			t.Errorf("Contains at %s = %v, want %v", renews.Sub(tc.now), got, tc.want)
		}
	}
}

// With SCAN_ENVIRONMENT=production, cmd/scan refuses a policy that leaves a
// customer-visible setting at a sample value, naming the setting.
func TestCheckProduction(t *testing.T) {
	t.Parallel()
	const own = "from: \"Acme <notices@acme.test>\"\ncancel_url: \"https://acme.test/cancel?t={token}\"\nmessage_id_domain: notices.acme.test\n"
	for _, tc := range []struct {
		name, yaml, field string
	}{
		{"built-in defaults", "", "from"},
		{"all set", own, ""},
		{"from left", strings.Replace(own, `from: "Acme <notices@acme.test>"`+"\n", "", 1), "from"},
		{"from copied from the sample", strings.Replace(own, "notices@acme.test", "notices@example.com", 1), "from"},
		{"cancel_url left", strings.Replace(own, `cancel_url: "https://acme.test/cancel?t={token}"`+"\n", "", 1), "cancel_url"},
		{"cancel_url on example.org", strings.Replace(own, "https://acme.test/", "https://www.example.org/", 1), "cancel_url"},
		{"message_id_domain left", strings.Replace(own, "message_id_domain: notices.acme.test\n", "", 1), "message_id_domain"},
		{"message_id_domain .example", strings.Replace(own, "notices.acme.test", "mail.shop.example", 1), "message_id_domain"},
		{"a domain that only contains example", strings.Replace(own, "acme.test", "myexample.com", -1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			err = p.CheckProduction()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Field != tc.field {
				t.Fatalf("err = %v, want a policy error naming %s", err, tc.field)
			}
		})
	}
}

func TestChannels(t *testing.T) {
	base := "notices:\n  - {kind: k, open_before: 72h, close_before: 24h, channels: %s}\n"
	for ch, ok := range map[string]bool{"[email]": true, "[email, sms]": true, "[]": true, "[sms]": true, "[sms, email]": true, "[sms, sms]": false, "[email, fax]": false, "[email, email]": false} {
		p, err := Parse(strings.NewReader(fmt.Sprintf(base, ch)))
		var pe *Error
		if ok != (err == nil) || (err != nil && (!errors.As(err, &pe) || !strings.Contains(pe.Field, "channels"))) {
			t.Errorf("channels %s: %v", ch, err)
		}
		if err == nil && p.UsesSMS() != strings.Contains(ch, "sms") {
			t.Errorf("channels %s: UsesSMS %v", ch, p.UsesSMS())
		}
	}
	p, err := Parse(strings.NewReader(""))
	if err != nil || p.Rate.SMS.PerSecond != 1 || p.Rate.SMS.Burst != 1 || p.SMSMaxSegments != 3 {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
	if _, err := Parse(strings.NewReader("sms_max_segments: 0\n")); err == nil {
		t.Fatal("sms_max_segments 0 accepted")
	}
}

// confirm_within (issue 36) loads on [email, sms] with a provider that
// reports delivery, and is refused naming the kind and the field: on
// other channels, not positive, with provider none, and (at run time)
// with the outbox or http sender.
func TestConfirmWithin(t *testing.T) {
	base := "provider: %s\nnotices:\n  - {kind: k, open_before: 72h, close_before: 24h, channels: %s, confirm_within: %s}\n"
	for _, tc := range []struct {
		provider, channels, within string
		ok                         bool
	}{
		{"ses", "[email, sms]", "2h", true},
		{"postmark", "[email, sms]", "30m", true},
		{"ses", "[email]", "2h", false},
		{"ses", "[sms, email]", "2h", false},
		{"ses", "[email, sms]", "-2h", false},
		{"none", "[email, sms]", "2h", false},
	} {
		p, err := Parse(strings.NewReader(fmt.Sprintf(base, tc.provider, tc.channels, tc.within)))
		var pe *Error
		if tc.ok != (err == nil) || (err != nil && (!errors.As(err, &pe) || pe.Field != "notices[k].confirm_within" || !strings.Contains(pe.Msg, "kind k"))) {
			t.Errorf("%+v: %v", tc, err)
		}
		if err == nil && time.Duration(p.Notices[0].ConfirmWithin).String() != mustDuration(t, tc.within).String() {
			t.Errorf("%+v: confirm_within %s", tc, p.Notices[0].ConfirmWithin)
		}
	}
	p, err := Parse(strings.NewReader(fmt.Sprintf(base, "ses", "[email, sms]", "2h")))
	if err != nil {
		t.Fatal(err)
	}
	for sender, ok := range map[string]bool{"ses": true, "smtp": true, "ses,smtp": true, "outbox": false, "http": false, "ses,http": false} {
		err := p.CheckConfirmSender(sender)
		var pe *Error
		if ok != (err == nil) || (err != nil && (!errors.As(err, &pe) || pe.Field != "notices[k].confirm_within")) {
			t.Errorf("sender %s: %v", sender, err)
		}
	}
	if p, err := Parse(strings.NewReader("notices:\n  - {kind: k, open_before: 72h, close_before: 24h}\n")); err != nil || p.CheckConfirmSender("outbox") != nil {
		t.Errorf("no confirm_within: the outbox sender is refused: %v", err)
	}
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
