package scan

import (
	"time"

	"scan/internal/policy"
	"scan/internal/subscription"
)

// What a notice says (issue 21) is the source row's content, resolved by
// subscription.Content; here, the quiet hours (issue 29) and a text's
// validity (issue 36), constant over a pass, whose now is fixed.

// content resolves a row's content for one pass (subscription.Content),
// and caches the quiet-hours verdict per zone. Not safe for concurrent
// use: the producer alone calls it (the sms stage has its own, fork).
type content struct {
	*subscription.Content
	pol     *policy.Policy
	quiet   map[string]quietVerdict // by zone name
	now     time.Time
	sched   interface{ Next(time.Time) time.Time }
	horizon time.Time // no window of this pass closes later
}

// quietVerdict is the quiet hours' verdict for one zone at the pass's
// now: quiet, and the next firing of the schedule outside them (polite)
// when there is one before the horizon.
type quietVerdict struct {
	quiet  bool
	polite time.Time
	ok     bool
}

func newContent(pol *policy.Policy, now time.Time, sched interface{ Next(time.Time) time.Time }) (*content, error) {
	c, err := subscription.NewContent(pol)
	if err != nil {
		return nil, &ConfigError{"default_time_zone", err.Error()}
	}
	return &content{Content: c, pol: pol, quiet: map[string]quietVerdict{}, now: now, sched: sched, horizon: now.Add(pol.LongestLead())}, nil
}

// fork is a content resolver of the same pass with caches of its own,
// for the sms stage: content is not safe for concurrent use.
func (c *content) fork() *content {
	d := *c
	d.Content, d.quiet = c.Content.Fork(), map[string]quietVerdict{}
	return &d
}

// textMinValidity is the least time a text must have left to arrive:
// Twilio's least ValidityPeriod (twilio.MinValidity). A text whose
// deliverBy leaves less is deferred, not sent (issue 36).
const textMinValidity = time.Second

// deliverBy is the last instant at which a text to a recipient in loc
// whose window closes at closes may still arrive (notice.DeliverBy, which
// the sms sender turns into Twilio's ValidityPeriod): the window's close,
// or the next beginning of the quiet hours in loc when that comes first.
func (c *content) deliverBy(loc *time.Location, closes time.Time) time.Time {
	if loc == nil {
		loc = c.DefaultZone()
	}
	if q := c.pol.QuietHours.NextStart(c.now, loc); !q.IsZero() && q.Before(closes) {
		return q
	}
	return closes
}

// defers reports whether a notice to a recipient in loc whose window
// closes at closes waits for a later pass: now lies inside the quiet
// hours in loc, and the schedule fires outside them before the window
// closes. Otherwise it goes now: the law comes first, and a notice is
// never deferred past the last pass that can still send it.
func (c *content) defers(loc *time.Location, closes time.Time) bool {
	q := c.pol.QuietHours
	if q == nil || c.sched == nil {
		return false
	}
	if loc == nil {
		loc = c.DefaultZone()
	}
	v, ok := c.quiet[loc.String()]
	if !ok {
		v.quiet = q.Quiet(c.now, loc)
		if v.quiet {
			v.polite, v.ok = q.NextPolite(c.sched, c.now, c.horizon, loc)
		}
		c.quiet[loc.String()] = v
	}
	return v.quiet && v.ok && v.polite.Before(closes)
}
