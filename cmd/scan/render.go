package main

import (
	"time"

	"scan/internal/message"
	"scan/internal/policy"
)

// withContent fills what a notice says from the policy into rc: the
// default locale and time zone (a row without a usable locale or
// time_zone is rendered in them) and the reminder-preferences link that
// List-Unsubscribe names. The renderer checks the locale and the link
// again; the zone is loaded here, from the embedded IANA database.
func withContent(rc *message.RenderConfig, pol *policy.Policy) error {
	rc.DefaultLocale = pol.DefaultLocale
	rc.PreferencesURL = pol.PreferencesURL
	if pol.DefaultTimeZone == "" {
		return nil
	}
	z, err := time.LoadLocation(pol.DefaultTimeZone)
	if err != nil || pol.DefaultTimeZone == "Local" {
		return usagef("default_time_zone", "%q is not an IANA time zone such as Europe/Vienna or UTC", pol.DefaultTimeZone)
	}
	rc.DefaultTimeZone = z
	return nil
}
