package scan

import (
	"time"

	"scan/internal/policy"
	"scan/internal/subscription"
)

// What a notice says (issue 21) is the source row's content, resolved by
// subscription.Content; the quiet hours (issue 29) and a text's validity
// (issue 36), constant over a pass whose now is fixed, by
// subscription.Quiet.

// content resolves a row's content and the quiet hours for one pass. Not
// safe for concurrent use: the producer alone calls it (the sms stage has
// its own, fork).
type content struct {
	*subscription.Content
	*subscription.Quiet
	now time.Time
}

func newContent(pol *policy.Policy, now time.Time, sched interface{ Next(time.Time) time.Time }) (*content, error) {
	c, err := subscription.NewContent(pol)
	if err != nil {
		return nil, &ConfigError{Field: "default_time_zone", Msg: err.Error()}
	}
	return &content{Content: c, Quiet: subscription.NewQuiet(pol, now, sched, c.DefaultZone()), now: now}, nil
}

// fork is a content resolver of the same pass with caches of its own,
// for the sms stage: content is not safe for concurrent use.
func (c *content) fork() *content {
	return &content{Content: c.Content.Fork(), Quiet: c.Quiet.Fork(), now: c.now}
}

// textMinValidity is the least time a text must have left to arrive:
// Twilio's least ValidityPeriod (twilio.MinValidity). A text whose
// DeliverBy leaves less is deferred, not sent (issue 36).
const textMinValidity = time.Second
