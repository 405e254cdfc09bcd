package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestContentDefaults(t *testing.T) {
	t.Parallel()
	p := Default()
	if p.DefaultLocale != "en" || p.DefaultTimeZone != "UTC" || p.PreferencesURL != "" || p.QuietHours != nil {
		t.Fatalf("defaults: locale %q, zone %q, preferences %q, quiet %v", p.DefaultLocale, p.DefaultTimeZone, p.PreferencesURL, p.QuietHours)
	}
	if k := p.Notices[0]; k.Anchor != "renews_at" || k.AnchorColumn() != "renews_at" {
		t.Fatalf("default anchor %q", k.Anchor)
	}
	p, err := Parse(strings.NewReader("default_locale: de_at\n"))
	if err != nil || p.DefaultLocale != "de-AT" {
		t.Fatalf("de_at: %v, %q (want the canonical de-AT)", err, p.DefaultLocale)
	}
}

const trialKinds = `
notices:
  - kind: renewal_notice_t72
    open_before: 72h
    close_before: 24h
    by_jurisdiction:
      US-CA: {open_before: 30d, close_before: 16d}
  - kind: trial_ending
    anchor: trial_ends_at
    open_before: 21d
    close_before: 3d
    legal:
      US-CA: {min_lead: 3d, max_lead: 21d}
legal:
  US-CA: {min_lead: 15d, max_lead: 45d, requires: [amount]}
`

// A kind's own legal rule replaces the jurisdiction's for that kind: the
// trial window [3d, 21d] is outside US-CA's renewal lead [15d, 45d] but
// inside the trial rule, and the trial requires nothing.
func TestKindLegalReplacesTheJurisdictions(t *testing.T) {
	t.Parallel()
	p, err := Parse(strings.NewReader(trialKinds))
	if err != nil {
		t.Fatal(err)
	}
	trial, _ := p.Kind("trial_ending")
	renewal, _ := p.Kind("renewal_notice_t72")
	if got := p.Requires(renewal, "US-CA"); len(got) != 1 || got[0] != "amount" {
		t.Errorf("renewal requires %v in US-CA", got)
	}
	if got := p.Requires(trial, "US-CA"); len(got) != 0 {
		t.Errorf("trial requires %v in US-CA, want nothing (its own rule replaces the jurisdiction's)", got)
	}
	if got := p.Requires(renewal, ""); got != nil {
		t.Errorf("no jurisdiction requires %v", got)
	}
	// The kind's own rule is checked: a trial window of 2d..21d is not
	// inside it.
	_, err = Parse(strings.NewReader(strings.Replace(trialKinds, "close_before: 3d", "close_before: 2d", 1)))
	wantField(t, err, "notices[trial_ending] (default window used in US-CA)", "before trial_ends_at lies outside the legal lead [3d, 21d]")
}

func wantField(t *testing.T, err error, field, msg string) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) || pe.Field != field || !strings.Contains(pe.Msg, msg) {
		t.Fatalf("err = %v, want field %s with %q", err, field, msg)
	}
}

func TestContentValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, field, msg string }{
		{"default_locale: not a tag\n", "default_locale", "BCP 47"},
		{"default_locale: und\n", "default_locale", "BCP 47"},
		{"default_time_zone: Mars/Base\n", "default_time_zone", "IANA"},
		{"default_time_zone: Local\n", "default_time_zone", "IANA"},
		{`preferences_url: "https://example.com/prefs"` + "\n", "preferences_url", "{token}"},
		{`preferences_url: "/prefs?t={token}"` + "\n", "preferences_url", "absolute http(s)"},
		{`preferences_url: "mailto:x@example.com?subject={token}"` + "\n", "preferences_url", "absolute http(s)"},
		{`preferences_url: "https://example.com/cancel?token={token}"` + "\n", "preferences_url", "is the cancel_url"},
		{`preferences_url: "https://EXAMPLE.com/cancel?token={token}"` + "\n", "preferences_url", "is the cancel_url"},
		{`quiet_hours: {from: "21:00"}` + "\n", "quiet_hours.to", "HH:MM"},
		{`quiet_hours: {from: "9pm", to: "08:00"}` + "\n", "quiet_hours.from", "HH:MM"},
		{`quiet_hours: {from: "24:00", to: "08:00"}` + "\n", "quiet_hours.from", "HH:MM"},
		{`quiet_hours: {from: "08:00", to: "08:00"}` + "\n", "quiet_hours", "span"},
		{"legal: {US-CA: {min_lead: 15d, max_lead: 45d, requires: [price]}}\nnotices: [{kind: k, open_before: 30d, close_before: 16d}]\n", "legal[US-CA].requires", `"price" is not one of amount, currency, billing_interval`},
		{"notices: [{kind: k, anchor: \"Trial Ends\", open_before: 72h, close_before: 24h}]\n", "notices[k].anchor", "column name"},
		{"notices: [{kind: k, anchor: \"trial;drop\", open_before: 72h, close_before: 24h}]\n", "notices[k].anchor", "column name"},
		{"notices: [{kind: k, open_before: 72h, close_before: 24h, legal: {US-CA: {min_lead: 1d, max_lead: 2d}}}]\n", "notices[k] (default window used in US-CA)", "outside the legal lead"},
		{"notices: [{kind: k, open_before: 72h, close_before: 24h, legal: {US-CA: {min_lead: 1d, max_lead: 4d, requires: [x]}}}]\n", "notices[k].legal[US-CA].requires", "not one of"},
	} {
		_, err := Parse(strings.NewReader(tc.yaml))
		wantField(t, err, tc.field, tc.msg)
	}
	p, err := Parse(strings.NewReader(`preferences_url: "https://example.com/reminders?token={token}"` + "\n" + `quiet_hours: {from: "21:00", to: "08:00"}` + "\n"))
	if err != nil || p.PreferencesURL == "" || p.QuietHours == nil {
		t.Fatalf("a valid preferences_url and quiet_hours: %v", err)
	}
}

func TestCheckProductionCoversPreferencesURL(t *testing.T) {
	t.Parallel()
	const own = "from: \"Acme <notices@acme.test>\"\ncancel_url: \"https://acme.test/cancel?t={token}\"\nmessage_id_domain: notices.acme.test\n"
	p, err := Parse(strings.NewReader(own + `preferences_url: "https://example.com/reminders?token={token}"` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	wantField(t, p.CheckProduction(), "preferences_url", "sample value")
	p, err = Parse(strings.NewReader(own + `preferences_url: "https://acme.test/reminders?token={token}"` + "\n"))
	if err != nil || p.CheckProduction() != nil {
		t.Fatalf("own preferences_url: %v, %v", err, p.CheckProduction())
	}
}

func TestQuietHoursSpan(t *testing.T) {
	t.Parallel()
	q := &QuietHours{From: "21:00", To: "08:00"}
	if err := q.parse(); err != nil {
		t.Fatal(err)
	}
	vienna, _ := time.LoadLocation("Europe/Vienna")
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, vienna)
	for _, tc := range []struct {
		at    string
		quiet bool
	}{{"20:59", false}, {"21:00", true}, {"23:59", true}, {"00:00", true}, {"07:59", true}, {"08:00", false}, {"12:00", false}} {
		h, _ := time.Parse("15:04", tc.at)
		at := day.Add(time.Duration(h.Hour())*time.Hour + time.Duration(h.Minute())*time.Minute)
		if got := q.Quiet(at.UTC(), vienna); got != tc.quiet {
			t.Errorf("%s Vienna: quiet %v, want %v", tc.at, got, tc.quiet)
		}
	}
	day2 := &QuietHours{From: "12:00", To: "13:00"}
	if err := day2.parse(); err != nil || day2.Quiet(day.Add(11*time.Hour), vienna) || !day2.Quiet(day.Add(12*time.Hour+30*time.Minute), vienna) {
		t.Fatal("a span inside one day")
	}
	var none *QuietHours
	if none.Quiet(day, vienna) || !none.NextStart(day, vienna).IsZero() {
		t.Fatal("nil quiet hours are quiet")
	}
	// The quiet hours begin next at 21:00 Vienna: today's, or tomorrow's
	// from 21:00 on (an sms sent inside them has until the next evening).
	for _, tc := range []struct{ at, want time.Time }{
		{day.Add(12 * time.Hour), day.Add(21 * time.Hour)},
		{day.Add(20*time.Hour + 59*time.Minute), day.Add(21 * time.Hour)},
		{day.Add(21 * time.Hour), day.AddDate(0, 0, 1).Add(21 * time.Hour)},
		{day.Add(2 * time.Hour), day.Add(21 * time.Hour)},
	} {
		if got := q.NextStart(tc.at.UTC(), vienna); !got.Equal(tc.want) {
			t.Errorf("at %v: quiet hours begin %v, want %v", tc.at, got, tc.want)
		}
	}
	// Hourly passes: the next one outside the quiet hours is 08:00.
	hourly, _ := cron.ParseStandard("0 * * * *")
	at := time.Date(2026, 11, 30, 1, 30, 0, 0, time.UTC)
	if got, ok := q.NextPolite(hourly, at, at.Add(72*time.Hour), vienna); !ok || !got.Equal(time.Date(2026, 11, 30, 8, 0, 0, 0, vienna)) {
		t.Errorf("next polite pass %v, %v", got, ok)
	}
	// A daily pass at 02:00 UTC is 03:00 in Vienna every day: never polite.
	daily, _ := cron.ParseStandard("0 2 * * *")
	if got, ok := q.NextPolite(daily, at, at.Add(30*24*time.Hour), vienna); ok {
		t.Errorf("daily 02:00 UTC has a polite pass in Vienna: %v", got)
	}
}
