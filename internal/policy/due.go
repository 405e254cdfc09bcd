package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"scan/internal/workday"
)

// Due is a deadline as a business writes it (issue 27): the notice of a
// kind becomes due at At (local "HH:MM", the recipient's time zone) on
// the WorkingDaysBefore-th working day before its anchor's local date,
// working days being those of Calendar (an ISO 3166-1 or 3166-2 code)
// that are not Weekend days. It replaces open_before; close_before still
// closes the window. Validate fills its private fields.
type Due struct {
	WorkingDaysBefore int    `yaml:"working_days_before"`
	At                string `yaml:"at"`
	Calendar          string `yaml:"calendar"`
	// Weekend lists the weekdays that are never working days (English
	// names, full or three letters). Default Saturday and Sunday.
	Weekend []string `yaml:"weekend"`

	hh, mm int
	cal    *workday.Calendar
	// minLead and maxLead: the shortest and longest time between opening
	// and anchor over the two years Validate looked at.
	minLead, maxLead time.Duration
}

// LeadHorizon is how far ahead Validate measures a due rule's leads:
// every anchor date of the next two years.
const LeadHorizon = 2 * 366

// compile checks kind's due rule d and fills its private fields; field
// names d's key.
func (d *Due) compile(field, kind string) error {
	bad := func(key, msg string) error { return &Error{Field: field + "." + key, Msg: "kind " + kind + ": " + msg} }
	if d.WorkingDaysBefore < 1 || d.WorkingDaysBefore > 60 {
		return bad("working_days_before", fmt.Sprintf("must be between 1 and 60, got %d", d.WorkingDaysBefore))
	}
	m, err := parseClock(d.At)
	if err != nil {
		return bad("at", err.Error())
	}
	d.hh, d.mm = m/60, m%60
	var weekend []time.Weekday
	for _, w := range d.Weekend {
		wd, err := workday.ParseWeekday(w)
		if err != nil {
			return bad("weekend", err.Error())
		}
		weekend = append(weekend, wd)
	}
	if d.Weekend != nil && len(weekend) == 0 {
		weekend = []time.Weekday{} // "weekend: []": every day may be a working day
	}
	c, err := workday.New(strings.TrimSpace(d.Calendar), weekend)
	if err != nil {
		return bad("calendar", err.Error())
	}
	d.cal = c
	return nil
}

// Rule is the rule's text as the ledger keeps it, e.g. "09:00 on the 3rd
// working day before renews_at, calendar DE, weekend sat+sun".
func (d *Due) Rule(anchor string) string {
	wk := "sat+sun"
	if d.Weekend != nil {
		names := make([]string, 0, len(d.Weekend))
		for _, w := range d.Weekend {
			if wd, err := workday.ParseWeekday(w); err == nil {
				names = append(names, strings.ToLower(wd.String()[:3]))
			}
		}
		wk = strings.Join(names, "+")
		if wk == "" {
			wk = "none"
		}
	}
	return fmt.Sprintf("%02d:%02d on the %s working day before %s, calendar %s, weekend %s", d.hh, d.mm, ordinal(d.WorkingDaysBefore), anchor, d.cal.Code(), wk)
}

func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// Opens returns when the notice of a charge (anchor) at anchor opens for
// a recipient in loc: At on the WorkingDaysBefore-th working day before
// anchor's date in loc.
func (d *Due) Opens(anchor time.Time, loc *time.Location) time.Time {
	day := d.cal.Back(workday.DateOf(anchor.In(loc)), d.WorkingDaysBefore)
	return workday.WallTime(day, d.hh, d.mm, loc)
}

// Bound returns, for a recipient in loc, the exclusive upper bound of the
// anchors whose notice has opened at now: Opens(a, loc) <= now exactly
// when a < Bound(now, loc). Opening is monotone in the anchor's date: the
// latest working day whose At has passed, W, opens every anchor date up
// to the WorkingDaysBefore-th working day after W.
func (d *Due) Bound(now time.Time, loc *time.Location) time.Time {
	today := workday.DateOf(now.In(loc))
	w := today
	if !d.cal.IsWorking(today) || workday.WallTime(today, d.hh, d.mm, loc).After(now) {
		w = d.cal.Back(today, 1)
	}
	last := d.cal.Forward(w, d.WorkingDaysBefore)
	return workday.StartOfDay(last.AddDays(1), loc)
}

// SupersetBound is an upper bound of Bound(now, loc) over every zone:
// the latest local date any zone has at now is the UTC date's next, and
// no zone's day starts more than 14 hours after UTC's.
func (d *Due) SupersetBound(now time.Time) time.Time {
	w := d.cal.LatestWorking(workday.DateOf(now.UTC()).AddDays(1))
	last := d.cal.Forward(w, d.WorkingDaysBefore)
	return workday.StartOfDay(last.AddDays(1), time.UTC).Add(14 * time.Hour)
}

// leads measures the rule over every anchor date of the LeadHorizon days
// from now's date in loc: for each, the lead from the opening to the
// first (min) and the last (max) instant of the date, and the date of the
// longest. It fills d.minLead and d.maxLead.
func (d *Due) leads(now time.Time, loc *time.Location) (longestOn, shortestOn workday.Date) {
	start := workday.DateOf(now.In(loc))
	d.minLead, d.maxLead = 0, 0
	for i := 0; i < LeadHorizon; i++ {
		day := start.AddDays(i)
		opens := workday.WallTime(d.cal.Back(day, d.WorkingDaysBefore), d.hh, d.mm, loc)
		lo := workday.StartOfDay(day, loc).Sub(opens)
		hi := workday.StartOfDay(day.AddDays(1), loc).Sub(opens)
		if i == 0 || lo < d.minLead {
			d.minLead, shortestOn = lo, day
		}
		if hi > d.maxLead {
			d.maxLead, longestOn = hi, day
		}
	}
	return longestOn, shortestOn
}

// MaxLead is the longest time before its anchor a notice of the rule can
// open (as Validate measured it over the next two years).
func (d *Due) MaxLead() time.Duration { return d.maxLead }

// checkDue checks kind k's due rule in jurisdiction j ("" for none)
// against the legal lead and the schedule's gap, in the policy's default
// time zone, over every anchor date of the next two years.
func (p *Policy) checkDue(field string, k Kind, j string, now time.Time, gap time.Duration) error {
	where := "kind " + k.Kind
	if j != "" {
		where += ", jurisdiction " + j
	}
	d := k.Due
	loc, err := LoadZone(p.DefaultTimeZone)
	if err != nil {
		loc = time.UTC
	}
	longestOn, shortestOn := d.leads(now, loc)
	closeBefore := time.Duration(k.CloseBefore)
	if k.CloseBefore < 0 {
		return &Error{Field: field, Msg: fmt.Sprintf("%s: close_before %s is negative", where, k.CloseBefore)}
	}
	if d.minLead <= closeBefore {
		return &Error{Field: field, Msg: fmt.Sprintf("%s: for a charge early on %s the window would close before it opens (it opens %s before the charge, close_before is %s)", where, shortestOn, FormatDuration(d.minLead), k.CloseBefore)}
	}
	if l, ok := p.LegalFor(k, j); ok {
		if k.CloseBefore < l.MinLead || Duration(d.maxLead) > l.MaxLead {
			return &Error{Field: field, Msg: fmt.Sprintf("%s: due rule opens up to %s before %s (for a charge on %s: weekends and holidays stretch the lead) and closes %s before; that lies outside the legal lead [%s, %s]", where, FormatDuration(d.maxLead), anchorWord(k), longestOn, k.CloseBefore, l.MinLead, l.MaxLead)}
		}
	}
	if width := d.minLead - closeBefore; width < gap {
		return &Error{Field: field, Msg: fmt.Sprintf("%s: for a charge early on %s the window is %s wide but schedule %q can leave %s between two passes; open earlier, close later or run more often", where, shortestOn, FormatDuration(width), p.Schedule, FormatDuration(gap))}
	}
	return nil
}
