package scan_test

import (
	"testing"
	"time"

	"scan/internal/ledger"
)

// dueRow is one subscription charged at renews (its own zone's wall
// clock, given as an instant) with time_zone zone ("" for NULL).
type dueRow struct {
	id, zone string
	renews   time.Time
}

func insertDue(t *testing.T, e *env, rows ...dueRow) {
	t.Helper()
	for _, r := range rows {
		var zone any
		if r.zone != "" {
			zone = r.zone
		}
		if _, err := e.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start, time_zone)
			VALUES ($1, $1 || '@x.com', $2, $3, $4)`, r.id, r.renews, r.renews.Format(time.DateOnly), zone); err != nil {
			t.Fatalf("insert %q: %v", r.id, err)
		}
	}
}

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func duePolicy(due string) string {
	return `
schedule: "0 * * * *"
message_id_domain: n.example.com
default_time_zone: Europe/Berlin
notices:
  - kind: pre_debit
    due: ` + due + `
    close_before: 1h
rate:
  default: {per_second: 10000, burst: 1000}
  global: {per_second: 100000, burst: 10000}
`
}

// dueSteps runs one pass at each step's instant and checks which
// subscriptions have a ledger row (claimed and sent) after it.
type dueStep struct {
	at   time.Time
	sent []string // every id sent so far
}

func runDueSteps(t *testing.T, e *env, due string, ids []string, steps []dueStep) {
	t.Helper()
	pol := mustPolicy(t, duePolicy(due))
	for _, st := range steps {
		contentPass(t, e, pol, st.at)
		want := map[string]bool{}
		for _, id := range st.sent {
			want[id] = true
		}
		for _, id := range ids {
			got := kindsOf(t, e, id)["pre_debit"]
			if want[id] && got != ledger.Sent {
				t.Errorf("at %s: %s is %q, want sent", st.at.UTC().Format(time.RFC3339), id, got)
			}
			if !want[id] && got != "" {
				t.Errorf("at %s: %s is %q, want not yet due", st.at.UTC().Format(time.RFC3339), id, got)
			}
		}
	}
	if got := e.smtp.Total(); got != len(steps[len(steps)-1].sent) {
		t.Errorf("SMTP received %d, want %d", got, len(steps[len(steps)-1].sent))
	}
}

// Three working days before a charge on Monday 28 December 2026, in
// Germany, is Tuesday the 22nd (25 and 26 December are holidays): due at
// 09:00 in each recipient's zone, not at 08:59. A recipient without a
// usable zone is measured in default_time_zone.
func TestDueAcrossChristmasInGermany(t *testing.T) {
	t.Parallel()
	e := setup(t)
	berlin, ny := zone(t, "Europe/Berlin"), zone(t, "America/New_York")
	charge := time.Date(2026, 12, 28, 10, 0, 0, 0, berlin)
	insertDue(t, e,
		dueRow{"berlin", "Europe/Berlin", charge},
		dueRow{"unknown_zone", "Mars/Olympus", charge},
		dueRow{"new_york", "America/New_York", charge},
		// Charged on the 29th: three working days before is the 23rd.
		dueRow{"berlin_29", "Europe/Berlin", charge.AddDate(0, 0, 1)},
	)
	ids := []string{"berlin", "unknown_zone", "new_york", "berlin_29"}
	runDueSteps(t, e, `{working_days_before: 3, at: "09:00", calendar: DE}`, ids, []dueStep{
		{time.Date(2026, 12, 22, 8, 59, 0, 0, berlin), nil},
		{time.Date(2026, 12, 22, 9, 0, 0, 0, berlin), []string{"berlin", "unknown_zone"}},
		{time.Date(2026, 12, 22, 8, 59, 0, 0, ny), []string{"berlin", "unknown_zone"}},
		{time.Date(2026, 12, 22, 9, 0, 0, 0, ny), []string{"berlin", "unknown_zone", "new_york"}},
		{time.Date(2026, 12, 23, 8, 59, 0, 0, berlin), []string{"berlin", "unknown_zone", "new_york"}},
		{time.Date(2026, 12, 23, 9, 0, 0, 0, berlin), ids},
	})
}

// Easter 2027 in Germany: Good Friday 26 March and Easter Monday 29 March
// are holidays, and the clocks go forward on Sunday the 28th, between the
// due day and the charge. A charge on Tuesday 30 March at 10:00 CEST is
// due on Tuesday 23 March at 09:00 CET (08:00 UTC).
func TestDueAcrossEasterAndDSTInGermany(t *testing.T) {
	t.Parallel()
	e := setup(t)
	berlin := zone(t, "Europe/Berlin")
	insertDue(t, e, dueRow{"easter", "Europe/Berlin", time.Date(2027, 3, 30, 10, 0, 0, 0, berlin)})
	runDueSteps(t, e, `{working_days_before: 3, at: "09:00", calendar: DE}`, []string{"easter"}, []dueStep{
		{time.Date(2027, 3, 22, 9, 0, 0, 0, berlin), nil},
		{time.Date(2027, 3, 23, 7, 59, 0, 0, time.UTC), nil},
		{time.Date(2027, 3, 23, 8, 0, 0, 0, time.UTC), []string{"easter"}},
	})
}

// Thanksgiving 2027 is Thursday 25 November: two working days before a
// charge on Monday the 29th is Wednesday the 24th (Friday the 26th works).
func TestDueAroundThanksgivingInTheUS(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ny := zone(t, "America/New_York")
	insertDue(t, e, dueRow{"thanksgiving", "America/New_York", time.Date(2027, 11, 29, 12, 0, 0, 0, ny)})
	runDueSteps(t, e, `{working_days_before: 2, at: "09:00", calendar: US}`, []string{"thanksgiving"}, []dueStep{
		{time.Date(2027, 11, 23, 9, 0, 0, 0, ny), nil},
		{time.Date(2027, 11, 24, 8, 59, 0, 0, ny), nil},
		{time.Date(2027, 11, 24, 9, 0, 0, 0, ny), []string{"thanksgiving"}},
	})
}

// The due day itself changes its clocks at the due time: in New York on
// Sunday 14 March 2027 (a working day with weekend: friday and saturday)
// 02:30 never happens; the notice is due when the clocks skip it, 03:00
// EDT (07:00 UTC), not an hour later and not at 01:59 EST.
func TestDueOnTheDSTChangeItself(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ny := zone(t, "America/New_York")
	insertDue(t, e, dueRow{"dst", "America/New_York", time.Date(2027, 3, 15, 12, 0, 0, 0, ny)})
	runDueSteps(t, e, `{working_days_before: 1, at: "02:30", calendar: US, weekend: [friday, saturday]}`, []string{"dst"}, []dueStep{
		{time.Date(2027, 3, 14, 6, 59, 0, 0, time.UTC), nil},
		{time.Date(2027, 3, 14, 7, 0, 0, 0, time.UTC), []string{"dst"}},
	})
}
