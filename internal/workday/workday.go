// Package workday owns working-day arithmetic: which days of a calendar
// are working days (not a weekend day, not a public holiday of an ISO 3166
// country or subdivision, holidays from github.com/rickar/cal/v2), the Nth
// working day before or after a date, and a local wall-clock time on a
// date in an IANA zone, DST gaps and repeats included.
//
// A Calendar is safe for concurrent use; its holiday sets are computed
// per year on first use and kept.
package workday

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rickar/cal/v2"
)

// Date is a civil date (no zone): midnight UTC of that day. Build one with
// DateOf or NewDate; compare with ==, Before and After.
type Date struct{ t time.Time }

// NewDate returns the date y-m-d (normalised as time.Date does).
func NewDate(y int, m time.Month, d int) Date { return Date{time.Date(y, m, d, 0, 0, 0, 0, time.UTC)} }

// DateOf returns the civil date of t in its own location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return NewDate(y, m, d)
}

// AddDays returns the date n days after d (before, for n < 0).
func (d Date) AddDays(n int) Date { return Date{d.t.AddDate(0, 0, n)} }

// Before reports whether d is an earlier date than e.
func (d Date) Before(e Date) bool { return d.t.Before(e.t) }

// After reports whether d is a later date than e.
func (d Date) After(e Date) bool { return d.t.After(e.t) }

// Sub returns the number of days from e to d.
func (d Date) Sub(e Date) int { return int(d.t.Sub(e.t) / (24 * time.Hour)) }

// Weekday returns the day of the week of d.
func (d Date) Weekday() time.Weekday { return d.t.Weekday() }

// String is YYYY-MM-DD.
func (d Date) String() string { return d.t.Format(time.DateOnly) }

// Codes returns the calendar codes Lookup knows, sorted.
func Codes() []string {
	out := make([]string, 0, len(calendars))
	for c := range calendars {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Known reports whether code (ISO 3166-1 alpha-2 or ISO 3166-2, upper
// case, e.g. DE, DE-BY, US, GB-ENG) names a calendar.
func Known(code string) bool {
	_, ok := calendars[code]
	return ok
}

// DefaultWeekend is Saturday and Sunday.
var DefaultWeekend = []time.Weekday{time.Saturday, time.Sunday}

// ParseWeekday reads a weekday's English name, full or its first three
// letters, in any case ("sat", "Saturday").
func ParseWeekday(s string) (time.Weekday, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	for d := time.Sunday; d <= time.Saturday; d++ {
		n := strings.ToLower(d.String())
		if l == n || (len(l) == 3 && strings.HasPrefix(n, l)) {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%q is not a weekday (monday ... sunday)", s)
}

// Calendar tells working days apart: every day that is neither a weekend
// day nor a public or bank holiday (actual or observed date) of its code.
// Build it with New.
type Calendar struct {
	code     string
	holidays []*cal.Holiday
	weekend  [7]bool

	mu    sync.Mutex
	years map[int]map[Date]bool // holidays by year, computed on first use
}

// New returns the calendar of code with weekend days weekend (nil:
// DefaultWeekend). An unknown code or a week without a working day is an
// error.
func New(code string, weekend []time.Weekday) (*Calendar, error) {
	hs, ok := calendars[code]
	if !ok {
		return nil, fmt.Errorf("unknown calendar %q (an ISO 3166-1 or 3166-2 code such as DE, DE-BY, US or GB-ENG)", code)
	}
	if weekend == nil {
		weekend = DefaultWeekend
	}
	c := &Calendar{code: code, years: map[int]map[Date]bool{}}
	for _, h := range hs {
		if h.Type != cal.ObservanceReligious && h.Type != cal.ObservanceOther {
			c.holidays = append(c.holidays, h)
		}
	}
	for _, d := range weekend {
		c.weekend[d] = true
	}
	if len(weekend) >= 7 || allTrue(c.weekend) {
		return nil, fmt.Errorf("weekend %v leaves no working day", weekend)
	}
	return c, nil
}

func allTrue(w [7]bool) bool {
	for _, b := range w {
		if !b {
			return false
		}
	}
	return true
}

// Code returns the calendar's code.
func (c *Calendar) Code() string { return c.code }

// holidaysOf returns the holiday dates of year y.
func (c *Calendar) holidaysOf(y int) map[Date]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if hs, ok := c.years[y]; ok {
		return hs
	}
	hs := map[Date]bool{}
	for _, h := range c.holidays {
		actual, observed := h.Calc(y)
		if !actual.IsZero() {
			hs[DateOf(actual)] = true
		}
		if !observed.IsZero() {
			hs[DateOf(observed)] = true
		}
	}
	c.years[y] = hs
	return hs
}

// IsWorking reports whether d is a working day.
func (c *Calendar) IsWorking(d Date) bool {
	if c.weekend[d.Weekday()] {
		return false
	}
	// An observed date may fall in the next or previous year (New Year's
	// Day on a Saturday, observed on 31 December): both years are asked.
	y := d.t.Year()
	return !c.holidaysOf(y)[d] && !c.holidaysOf(y + 1)[d] && !c.holidaysOf(y - 1)[d]
}

// maxStretch bounds the walk of Back and Forward: no calendar has a year
// without working days, so a walk that long means a broken calendar.
const maxStretch = 366

// Back returns the nth working day before d (d itself not counted; n >= 1).
func (c *Calendar) Back(d Date, n int) Date { return c.walk(d, n, -1) }

// Forward returns the nth working day after d (d itself not counted; n >= 1).
func (c *Calendar) Forward(d Date, n int) Date { return c.walk(d, n, +1) }

func (c *Calendar) walk(d Date, n, step int) Date {
	for i := 0; n > 0 && i < maxStretch*(n+1); i++ {
		d = d.AddDays(step)
		if c.IsWorking(d) {
			n--
		}
	}
	return d
}

// LatestWorking returns the latest working day on or before d.
func (c *Calendar) LatestWorking(d Date) Date {
	if c.IsWorking(d) {
		return d
	}
	return c.Back(d, 1)
}

// WallTime returns the instant at which the clocks of loc first show
// hh:mm on date d. When the clocks skip that time (a DST gap), it is the
// instant they skip it, the end of the gap; when they show it twice (DST
// ends), the first of the two.
func WallTime(d Date, hh, mm int, loc *time.Location) time.Time {
	y, m, day := d.t.Date()
	t := time.Date(y, m, day, hh, mm, 0, 0, loc)
	if t.Hour() != hh || t.Minute() != mm || t.Day() != day {
		// In a gap: time.Date picked one of the two offsets around it;
		// the gap's end is the transition, a bound of t's zone period.
		start, end := t.ZoneBounds()
		if lh, lm := t.Hour()*60+t.Minute(), hh*60+mm; t.Day() != day || lh > lm {
			return start
		}
		return end
	}
	// Shown twice: the same wall clock in the zone period before t's.
	start, _ := t.ZoneBounds()
	if !start.IsZero() {
		_, off := t.Zone()
		_, prevOff := start.Add(-time.Nanosecond).Zone()
		if prevOff > off {
			earlier := t.Add(-time.Duration(prevOff-off) * time.Second)
			if earlier.Before(start) && earlier.Hour() == hh && earlier.Minute() == mm {
				return earlier
			}
		}
	}
	return t
}

// StartOfDay returns the first instant of date d in loc.
func StartOfDay(d Date, loc *time.Location) time.Time { return WallTime(d, 0, 0, loc) }
