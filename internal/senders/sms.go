package senders

import (
	"net/url"

	"scan/internal/clock"
	"scan/internal/provider/twilio"
	"scan/internal/send"
	"scan/internal/usage"
)

// SMS builds the sms channel's Twilio client from TWILIO_* and
// SCAN_TWILIO_STATUS_CALLBACK, counting each text's ValidityPeriod on
// clk. Outside production the API must be on loopback, and a staging
// redirect (an email address) turns the sms channel off (nil, nil): no
// pass may text a real customer from staging. cfg.Names is not read.
func SMS(cfg Config, clk clock.Clock) (*twilio.Client, error) {
	if cfg.Redirect != "" {
		return nil, nil
	}
	tc := twilio.AccountConfig(cfg.Getenv)
	tc.StatusCallback, tc.Clock = cfg.Getenv("SCAN_TWILIO_STATUS_CALLBACK"), clk
	c, err := twilio.New(tc) // a *twilio.ConfigError names the variable: a usage.Error as it is
	if err != nil {
		return nil, err
	}
	api := cfg.Getenv("TWILIO_API_URL")
	if api == "" {
		api = twilio.DefaultBaseURL
	}
	if u, _ := url.Parse(api); !cfg.Production && !send.IsLoopback(u.Hostname()) {
		return nil, usage.Errorf("TWILIO_API_URL", "%s is not loopback: outside SCAN_ENVIRONMENT=production the sms channel only talks to a stand-in", u.Host)
	}
	return c, nil
}
