package policy

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var dueNow = time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)

func duePolicy(kind string) string {
	return `
schedule: "0 * * * *"
default_time_zone: Europe/Berlin
notices:
` + kind
}

func parseDue(t *testing.T, kind string) (*Policy, error) {
	t.Helper()
	return ParseAt(strings.NewReader(duePolicy(kind)), dueNow)
}

func TestDueParsesAndMeasures(t *testing.T) {
	t.Parallel()
	p, err := parseDue(t, `  - kind: pre_debit
    due: {working_days_before: 3, at: "09:00", calendar: DE}
    close_before: 1h
`)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := p.Kind("pre_debit")
	w := k.Default()
	if got, want := w.Rule("renews_at"), "09:00 on the 3rd working day before renews_at, calendar DE, weekend sat+sun; closes 1h0m0s before"; got != want {
		t.Errorf("rule = %q, want %q", got, want)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	charge := time.Date(2026, 12, 28, 10, 0, 0, 0, berlin)
	if got, want := w.Opens(charge, berlin), time.Date(2026, 12, 22, 9, 0, 0, 0, berlin); !got.Equal(want) {
		t.Errorf("opens %s, want %s", got, want)
	}
	// Easter 2028 (Good Friday 14 April, Easter Monday 17 April): a
	// charge late on Tuesday 18 April opens on Tuesday 11 April at 09:00.
	if got, want := p.LongestLead(), 7*24*time.Hour+15*time.Hour; got != want {
		t.Errorf("longest lead %s, want %s", got, want)
	}
	if b := k.Due.Bound(time.Date(2026, 12, 22, 8, 59, 0, 0, berlin), berlin); !b.Equal(time.Date(2026, 12, 25, 0, 0, 0, 0, berlin)) {
		t.Errorf("bound at 08:59 = %s: only charges up to the 24th (opened on the 21st) are due", b)
	}
	if b := k.Due.Bound(time.Date(2026, 12, 22, 9, 0, 0, 0, berlin), berlin); !b.Equal(time.Date(2026, 12, 29, 0, 0, 0, 0, berlin)) {
		t.Errorf("bound at 09:00 = %s: the 28th must be due", b)
	}
	if s := k.Due.SupersetBound(time.Date(2026, 12, 22, 9, 0, 0, 0, berlin)); s.Before(time.Date(2026, 12, 29, 0, 0, 0, 0, berlin)) {
		t.Errorf("superset %s below the zone's bound", s)
	}
}

func TestDueRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, kind string
		want       []string
	}{
		{"both", `  - kind: k1
    open_before: 72h
    due: {working_days_before: 3, at: "09:00", calendar: DE}
    close_before: 1h
`, []string{"notices[k1]", "kind k1", "exclusive"}},
		{"unknown calendar", `  - kind: k2
    due: {working_days_before: 3, at: "09:00", calendar: XX}
    close_before: 1h
`, []string{"notices[k2].due.calendar", "kind k2", "unknown calendar"}},
		{"bad at", `  - kind: k3
    due: {working_days_before: 3, at: "9am", calendar: DE}
    close_before: 1h
`, []string{"notices[k3].due.at", "kind k3"}},
		{"bad weekend", `  - kind: k4
    due: {working_days_before: 3, at: "09:00", calendar: DE, weekend: [caturday]}
    close_before: 1h
`, []string{"notices[k4].due.weekend", "kind k4"}},
		// Two working days at 09:00 leave at least 39h before a charge
		// at midnight; closing 40h before, some windows would be empty.
		{"closes before it opens", `  - kind: k5
    due: {working_days_before: 2, at: "09:00", calendar: DE}
    close_before: 40h
`, []string{"notices[k5]", "kind k5", "close before it opens"}},
		// Hourly passes, but a window of under an hour for a charge at
		// 00:00 (opens 23:30 the working day before).
		{"gap", `  - kind: k6
    due: {working_days_before: 1, at: "23:30", calendar: DE}
    close_before: 1m
`, []string{"notices[k6]", "kind k6", "between two passes"}},
	} {
		_, err := parseDue(t, tc.kind)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want a policy error", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
	}
}

// Three working days before a charge reach back five days and 15 hours
// over a weekend, but seven days and 15 hours over Easter: a max_lead of
// 6d that every plain week meets is refused at load, naming the kind and
// the jurisdiction; 8d is accepted.
func TestDueHolidayStretchBreaksLegalLead(t *testing.T) {
	t.Parallel()
	kind := `  - kind: pre_debit
    due: {working_days_before: 3, at: "09:00", calendar: DE}
    close_before: 1d
legal:
  DE: {min_lead: 1d, max_lead: MAX}
`
	_, err := parseDue(t, strings.Replace(kind, "MAX", "6d", 1))
	if err == nil {
		t.Fatal("a due rule that holidays stretch beyond max_lead was accepted")
	}
	for _, w := range []string{"kind pre_debit", "jurisdiction DE", "outside the legal lead", "holidays"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
	if _, err := parseDue(t, strings.Replace(kind, "MAX", "8d", 1)); err != nil {
		t.Fatalf("max_lead 8d: %v", err)
	}
}
