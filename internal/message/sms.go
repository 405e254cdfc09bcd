package message

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"scan/internal/notice"
)

// ErrNoSMSTemplate: no <kind>.<locale>.sms.tmpl (nor a default) along the
// fallback chain.
var ErrNoSMSTemplate = errors.New("render: no sms template")

// RenderSMS returns the sms channel's body of n: the first
// <kind>.<locale>.sms.tmpl along the same fallback chain as the email
// templates (templates_dir before the embedded set, de-AT -> de ->
// default_locale -> <kind>.sms.tmpl -> default.*), with the amount, the
// date and the cancel link of the email's text, trimmed, no-break spaces
// made plain (smsSpaces). The embedded default.en.sms.tmpl and
// default.de.sms.tmpl are GSM-7, one segment with a short cancel link and
// two with a long one. It reads no clock and needs no ClaimedAt.
func (r *Renderer) RenderSMS(n notice.Notice) (string, error) {
	if n.CancelToken == "" {
		return "", errors.New("render: notice has no CancelToken")
	}
	n.Name, n.Plan = cut(n.Name, MaxNameLen), cut(n.Plan, MaxPlanLen)
	tag, ok := parseLocale(n.Locale)
	if !ok {
		tag = r.defaultLocale
	}
	t, in := find(r.candidates(n.Kind, tag), func(s *templateSet) map[string]*tmpl { return s.sms })
	if t == nil {
		return "", fmt.Errorf("%w for kind %q", ErrNoSMSTemplate, n.Kind)
	}
	sc := r.scratch()
	defer r.release(sc)
	data := r.data(sc, &n, r.formatFor(formatLocale(tag, in)))
	start := len(sc.b)
	out, err := t.execute(sc.b, &data)
	if err != nil {
		return "", fmt.Errorf("render: sms: %w", err)
	}
	sc.b = out
	return strings.TrimSpace(smsSpaces.Replace(string(sc.b[start:]))), nil
}

// smsSpaces replaces the no-break spaces CLDR puts in amounts and dates
// ("12,99\u00a0€") with plain ones: they are outside GSM-7, and one would
// make the whole body UCS-2, less than half the characters a segment.
var smsSpaces = strings.NewReplacer("\u00a0", " ", "\u202f", " ", "\u2009", " ")

// SMSSample is one sample notice CheckSMS renders.
type SMSSample struct {
	Kind, Locale string
}

// CheckSMS renders each sample (built-in sample data: a plan name, an
// amount of 1234.56 EUR, a date in September, a 32-character token) and
// returns an error naming the first whose body exceeds maxSegments
// segments (SMSSegments) or does not render: what `scan run` and `scan
// preview` refuse at load (exit 2) for a kind with the sms channel.
func (r *Renderer) CheckSMS(samples []SMSSample, maxSegments int) error {
	for _, s := range samples {
		n := notice.Notice{Key: strings.Repeat("a", 64), Tuple: notice.Tuple{Kind: s.Kind}, Locale: s.Locale, Plan: "Premium Plus",
			RenewsAt: time.Date(2026, 9, 30, 9, 0, 0, 0, time.UTC), Amount: "1234.56", Currency: "EUR",
			CancelToken: strings.Repeat("0123456789abcdef", 2), Interval: "month", IntervalCount: 1}
		body, err := r.RenderSMS(n)
		if err != nil {
			return fmt.Errorf("kind %s, locale %s: %w", s.Kind, s.Locale, err)
		}
		if enc, segs := SMSSegments(body); segs > maxSegments {
			return fmt.Errorf("kind %s, locale %s: the sample sms is %d %s segments, over sms_max_segments %d", s.Kind, s.Locale, segs, enc, maxSegments)
		}
	}
	return nil
}
