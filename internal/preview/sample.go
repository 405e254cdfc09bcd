package preview

import (
	"fmt"
	"time"

	"golang.org/x/text/currency"
	"golang.org/x/text/language"

	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/scan"
)

// Sample is a request for one sample notice (scan preview --out).
type Sample struct {
	Kind, Locale, Jurisdiction string
}

// sampleSecret derives the sample notices' key and cancellation token:
// never a customer's.
const sampleSecret = "scan-preview-sample-notice-secret-not-for-sending"

// SampleNotice returns the notice of s built from built-in sample data
// (a name, a plan, an amount in the locale's currency, a monthly
// interval), anchored in the middle of the kind's window at now, in the
// policy's default time zone. It reads no database.
func SampleNotice(pol *policy.Policy, s Sample, now time.Time) (notice.Notice, error) {
	k, ok := pol.Kind(s.Kind)
	if !ok {
		return notice.Notice{}, &scan.ConfigError{Field: "kind", Msg: fmt.Sprintf("%q is not a kind of the policy", s.Kind)}
	}
	tag, err := language.Parse(s.Locale)
	if err != nil || tag == language.Und {
		return notice.Notice{}, &scan.ConfigError{Field: "locale", Msg: fmt.Sprintf("%q is not a BCP 47 language tag such as en or de-AT", s.Locale)}
	}
	zone, err := policy.LoadZone(pol.DefaultTimeZone)
	if err != nil {
		return notice.Notice{}, &scan.ConfigError{Field: "default_time_zone", Msg: err.Error()}
	}
	cur, conf := currency.FromTag(tag)
	if conf == language.No {
		cur = currency.USD
	}
	w := k.WindowFor(s.Jurisdiction)
	lead := time.Duration(w.OpenBefore)
	if w.Due != nil {
		lead = w.Due.MaxLead()
	}
	anchor := now.Add((lead + time.Duration(w.CloseBefore)) / 2).Truncate(time.Hour)
	period := time.Date(anchor.Year(), anchor.Month(), anchor.Day(), 0, 0, 0, 0, time.UTC)
	keyer, err := notice.NewKeyer([]byte(sampleSecret))
	if err != nil {
		return notice.Notice{}, err
	}
	t := notice.Tuple{SubscriptionID: "sub_sample", PeriodStart: period, Kind: k.Kind}
	return notice.Notice{
		Key: keyer.Key(t), Tuple: t,
		RenewsAt: anchor, AnchorAt: anchor, To: "customer@example.com", Domain: "example.com",
		Name: "Alex Example", Plan: "Example Box Plus", CancelToken: keyer.CancelToken(t), ClaimedAt: now,
		Amount: "12.99", Currency: cur.String(), Interval: "month", IntervalCount: 1,
		Locale: tag.String(), TimeZone: zone,
	}, nil
}
