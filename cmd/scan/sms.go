package main

import (
	"scan/internal/message"
	"scan/internal/policy"
)

// checkSMSTemplates renders a sample sms of every kind with the sms
// channel in English, German and the default locale, and refuses (exit 2)
// one over sms_max_segments or one that does not render.
func checkSMSTemplates(r *message.Renderer, pol *policy.Policy) error {
	var samples []message.SMSSample
	for _, k := range pol.Notices {
		if !k.HasSMS() {
			continue
		}
		for _, l := range []string{"en", "de", pol.DefaultLocale} {
			samples = append(samples, message.SMSSample{Kind: k.Kind, Locale: l})
		}
	}
	if err := r.CheckSMS(samples, pol.SMSMaxSegments); err != nil {
		return usagef("sms_max_segments", "%v", err)
	}
	return nil
}
