package job

import (
	"os"

	"scan/internal/message"
	"scan/internal/policy"
	"scan/internal/provider/registry"
	"scan/internal/usage"
)

// Renderer builds the message renderer from the policy: one place, so
// that `scan preview` renders exactly what a pass sends. A setting it
// cannot take is a *scan.ConfigError naming it.
func Renderer(pol *policy.Policy) (*message.Renderer, error) {
	correlation, err := registry.Correlation(pol.Provider, pol.SES.ConfigurationSet)
	if err != nil {
		return nil, usage.Errorf("provider", "%v", err)
	}
	// The default locale and time zone render a row without a usable
	// locale or time_zone; the policy checked both, the zone is loaded
	// from the embedded IANA database.
	rc := message.RenderConfig{From: pol.From, MessageIDDomain: pol.MessageIDDomain, CancelURL: pol.CancelURL,
		Correlation: correlation, DefaultLocale: pol.DefaultLocale, PreferencesURL: pol.PreferencesURL}
	if rc.DefaultTimeZone, err = policy.LoadZone(pol.DefaultTimeZone); err != nil {
		return nil, usage.Errorf("default_time_zone", "%v", err)
	}
	if pol.TemplatesDir != "" {
		rc.Templates = os.DirFS(pol.TemplatesDir)
	}
	r, err := message.NewRenderer(rc)
	if err != nil {
		return nil, usage.Errorf("config", "%v", err)
	}
	if err := checkSMSTemplates(r, pol); err != nil {
		return nil, err
	}
	return r, nil
}

// checkSMSTemplates renders a sample sms of every kind with the sms
// channel in English, German and the default locale, and refuses
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
		return usage.Errorf("sms_max_segments", "%v", err)
	}
	return nil
}
