package subscription

import (
	"time"

	"scan/internal/policy"
)

// Quiet is the policy's quiet hours (issue 29) at a pass's now, as
// DueBounds is a due rule: per recipient's time zone, whether now lies
// inside them and the schedule's next firing outside them, found once
// per zone. Not safe for concurrent use: Fork gives a goroutine its own.
type Quiet struct {
	hours   *policy.QuietHours
	now     time.Time
	sched   interface{ Next(time.Time) time.Time }
	horizon time.Time      // no window of the pass closes later
	def     *time.Location // the policy's default_time_zone
	byZone  map[string]quietVerdict
}

// quietVerdict is the quiet hours' verdict for one zone at now: quiet,
// and the next firing of the schedule outside them (polite) when there
// is one before the horizon.
type quietVerdict struct {
	quiet  bool
	polite time.Time
	ok     bool
}

// NewQuiet evaluates pol's quiet hours at now for passes run on sched
// (nil: a notice is never deferred); def is the zone of a recipient
// without one (Content.DefaultZone).
func NewQuiet(pol *policy.Policy, now time.Time, sched interface{ Next(time.Time) time.Time }, def *time.Location) *Quiet {
	return &Quiet{hours: pol.QuietHours, now: now, sched: sched, horizon: now.Add(pol.LongestLead()), def: def, byZone: map[string]quietVerdict{}}
}

// Fork is q with a cache of its own.
func (q *Quiet) Fork() *Quiet {
	d := *q
	d.byZone = map[string]quietVerdict{}
	return &d
}

// Defers reports whether a notice to a recipient in loc whose window
// closes at closes waits for a later pass: now lies inside the quiet
// hours in loc, and the schedule fires outside them before the window
// closes. Otherwise it goes now: the law comes first, and a notice is
// never deferred past the last pass that can still send it.
func (q *Quiet) Defers(loc *time.Location, closes time.Time) bool {
	if q.hours == nil || q.sched == nil {
		return false
	}
	if loc == nil {
		loc = q.def
	}
	v, ok := q.byZone[loc.String()]
	if !ok {
		v.quiet = q.hours.Quiet(q.now, loc)
		if v.quiet {
			v.polite, v.ok = q.hours.NextPolite(q.sched, q.now, q.horizon, loc)
		}
		q.byZone[loc.String()] = v
	}
	return v.quiet && v.ok && v.polite.Before(closes)
}

// DeliverBy is the last instant at which a text to a recipient in loc
// whose window closes at closes may still arrive (notice.DeliverBy, which
// the sms sender turns into Twilio's ValidityPeriod): the window's close,
// or the next beginning of the quiet hours in loc when that comes first.
func (q *Quiet) DeliverBy(loc *time.Location, closes time.Time) time.Time {
	if loc == nil {
		loc = q.def
	}
	if s := q.hours.NextStart(q.now, loc); !s.IsZero() && s.Before(closes) {
		return s
	}
	return closes
}
