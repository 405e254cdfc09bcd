package job

import (
	"scan/internal/clock"
	"scan/internal/senders"
)

// Complete checks the settings against each other and builds what they
// imply, before anything is written. The policy's confirm_within must be
// one every sender of the failover list can report (any of them may take
// a notice); in production (SCAN_ENVIRONMENT=production) the policy may
// hold no sample value. Then it builds the renderer (Renderer) and the
// sms channel's sender on SMSClock, a clock each pass moves to its now:
// with sc when the policy names the channel, none otherwise. c.Policy and
// c.Senders must be set.
func (c *Config) Complete(sc senders.Config, clk clock.Clock) error {
	for _, name := range c.Senders.Names() {
		if err := c.Policy.CheckConfirmSender(name); err != nil {
			return err
		}
	}
	if sc.Production {
		if err := c.Policy.CheckProduction(); err != nil {
			return err
		}
	}
	var err error
	if c.Renderer, err = Renderer(c.Policy); err != nil {
		return err
	}
	c.SMSClock = clock.NewShifted(clk)
	if c.Policy.UsesSMS() {
		c.SMS, err = senders.SMS(sc, c.SMSClock)
	}
	return err
}
