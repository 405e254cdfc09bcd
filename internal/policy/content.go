package policy

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/text/language"
)

// What a notice says (issue 21): each kind's anchor, the content a
// jurisdiction requires, the recipient's defaults and quiet hours.

// DefaultAnchor is the anchor of a kind that names none: the charge.
const DefaultAnchor = "renews_at"

// Requirable fields, the values `requires:` accepts. A row that lacks one
// its jurisdiction requires is invalid, reason "missing_<field>". An
// amount without a currency is a bad row anyway (it cannot be shown), so
// requiring amount implies a currency.
const (
	FieldAmount          = "amount"
	FieldCurrency        = "currency"
	FieldBillingInterval = "billing_interval"
)

// Requirable lists the fields `requires:` may name.
var Requirable = []string{FieldAmount, FieldCurrency, FieldBillingInterval}

// anchorRe is a plain lower-case column identifier: the source's column
// is quoted as written, and an unquoted SQL name folds to lower case.
var anchorRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// AnchorColumn returns the source column k's window is measured from.
func (k Kind) AnchorColumn() string {
	if k.Anchor == "" {
		return DefaultAnchor
	}
	return k.Anchor
}

// LegalFor returns the legal rule of kind k in jurisdiction j: the kind's
// own (legal: under the kind), which replaces the policy's for that kind,
// else the policy's; false when neither names j.
func (p *Policy) LegalFor(k Kind, j string) (Legal, bool) {
	if j == "" {
		return Legal{}, false
	}
	if l, ok := k.Legal[j]; ok {
		return l, true
	}
	l, ok := p.Legal[j]
	return l, ok
}

// Requires returns the fields a notice of kind k must carry in
// jurisdiction j (nil when none).
func (p *Policy) Requires(k Kind, j string) []string {
	l, _ := p.LegalFor(k, j)
	return l.Requires
}

// legalJurisdictions returns every jurisdiction with a legal rule for k.
func (p *Policy) legalJurisdictions(k Kind) []string {
	var out []string
	for j := range p.Legal {
		out = append(out, j)
	}
	for j := range k.Legal {
		if _, ok := p.Legal[j]; !ok {
			out = append(out, j)
		}
	}
	slices.Sort(out)
	return out
}

func (p *Policy) fillContentDefaults() {
	if p.DefaultLocale == "" {
		p.DefaultLocale = "en"
	}
	if p.DefaultTimeZone == "" {
		p.DefaultTimeZone = "UTC"
	}
	for i := range p.Notices {
		if p.Notices[i].Anchor == "" {
			p.Notices[i].Anchor = DefaultAnchor
		}
	}
}

// validateContent checks the settings of what a notice says: the
// defaults, the preferences link and the quiet hours.
func (p *Policy) validateContent() error {
	tag, err := language.Parse(p.DefaultLocale)
	if err != nil || tag == language.Und {
		return &Error{Field: "default_locale", Msg: fmt.Sprintf("%q is not a BCP 47 language tag such as en or de-AT", p.DefaultLocale)}
	}
	p.DefaultLocale = tag.String()
	if _, err := LoadZone(p.DefaultTimeZone); err != nil {
		return &Error{Field: "default_time_zone", Msg: err.Error()}
	}
	if p.PreferencesURL != "" {
		if err := checkPreferencesURL(p.PreferencesURL, p.CancelURL); err != nil {
			return &Error{Field: "preferences_url", Msg: err.Error()}
		}
	}
	if p.QuietHours != nil {
		if err := p.QuietHours.parse(); err != nil {
			return err
		}
	}
	return nil
}

// LoadZone loads an IANA time zone by name. It refuses "" and "Local"
// (the machine's zone, which differs from one host to the next).
func LoadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("%q is not an IANA time zone such as Europe/Vienna or UTC", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%q is not an IANA time zone such as Europe/Vienna or UTC", name)
	}
	return loc, nil
}

// checkPreferencesURL: an absolute http(s) URL with {token}, which must
// not be the cancellation link (a mail client's "Unsubscribe" button would
// then cancel the plan).
func checkPreferencesURL(raw, cancel string) error {
	if !strings.Contains(raw, "{token}") {
		return fmt.Errorf("must contain {token}")
	}
	u, err := url.Parse(strings.ReplaceAll(raw, "{token}", "t"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return fmt.Errorf("must be an absolute http(s) URL such as https://example.com/reminders?token={token}")
	}
	c, err := url.Parse(strings.ReplaceAll(cancel, "{token}", "t"))
	if raw == cancel || (err == nil && strings.EqualFold(c.Host, u.Host) && c.Path == u.Path && c.RawQuery == u.RawQuery) {
		return fmt.Errorf("is the cancel_url: List-Unsubscribe must never cancel the plan; point it at the reminder preferences")
	}
	return nil
}

// validateKindContent checks kind k's anchor and its own legal rules
// (field names the kind).
func validateKindContent(f string, k Kind) error {
	if !anchorRe.MatchString(k.Anchor) {
		return &Error{Field: f + ".anchor", Msg: fmt.Sprintf("%q is not a plain lower-case column name such as trial_ends_at", k.Anchor)}
	}
	for _, j := range sortedKeys(k.Legal) {
		if err := checkLegal(f+".legal["+j+"]", j, k.Legal[j]); err != nil {
			return err
		}
	}
	return nil
}

// checkLegal checks one legal rule: its bounds and the fields it
// requires.
func checkLegal(f, j string, l Legal) error {
	if j == "" {
		return &Error{Field: f, Msg: "empty jurisdiction name"}
	}
	if l.MinLead < 0 || l.MaxLead <= 0 || l.MinLead > l.MaxLead {
		return &Error{Field: f, Msg: fmt.Sprintf("need 0 <= min_lead <= max_lead, got [%s, %s]", l.MinLead, l.MaxLead)}
	}
	for _, r := range l.Requires {
		if !slices.Contains(Requirable, r) {
			return &Error{Field: f + ".requires", Msg: fmt.Sprintf("%q is not one of %s", r, strings.Join(Requirable, ", "))}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// parse reads From and To ("HH:MM", 24-hour) into minutes of the day.
func (q *QuietHours) parse() error {
	var err error
	if q.from, err = parseClock(q.From); err != nil {
		return &Error{Field: "quiet_hours.from", Msg: err.Error()}
	}
	if q.to, err = parseClock(q.To); err != nil {
		return &Error{Field: "quiet_hours.to", Msg: err.Error()}
	}
	if q.from == q.to {
		return &Error{Field: "quiet_hours", Msg: fmt.Sprintf("from and to are both %s: give a span such as from: \"21:00\", to: \"08:00\"", q.From)}
	}
	return nil
}

func parseClock(s string) (int, error) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, fmt.Errorf("%q is not a time of day HH:MM such as 21:00", s)
	}
	return t.Hour()*60 + t.Minute(), nil
}

// Quiet reports whether t, read in loc, lies inside the quiet hours
// [From, To), which wrap midnight when From is later than To. A nil
// QuietHours is never quiet.
func (q *QuietHours) Quiet(t time.Time, loc *time.Location) bool {
	if q == nil {
		return false
	}
	lt := t.In(loc)
	m := lt.Hour()*60 + lt.Minute()
	if q.from < q.to {
		return m >= q.from && m < q.to
	}
	return m >= q.from || m < q.to
}

// NextStart returns the first instant after now at which the quiet hours
// begin in loc (From, on now's day in loc or the next); zero for nil
// QuietHours. An sms sent at now must reach the handset before it: its
// ValidityPeriod ends there at the latest (issue 36).
func (q *QuietHours) NextStart(now time.Time, loc *time.Location) time.Time {
	if q == nil {
		return time.Time{}
	}
	lt := now.In(loc)
	for d := 0; d < 3; d++ {
		start := time.Date(lt.Year(), lt.Month(), lt.Day()+d, q.from/60, q.from%60, 0, 0, loc)
		if start.After(now) {
			return start
		}
	}
	return time.Time{}
}

// NextPolite returns the first firing of sched after now that lies
// outside the quiet hours in loc and before until; false when there is
// none. A pass defers a quiet-hours notice only when such a firing comes
// before its window closes (see docs/configuration.md, "Quiet hours").
func (q *QuietHours) NextPolite(sched interface{ Next(time.Time) time.Time }, now, until time.Time, loc *time.Location) (time.Time, bool) {
	t := now
	// A schedule firing every minute reaches the end of any quiet span
	// within 1440 firings; the bound only guards a schedule that never
	// leaves it.
	for i := 0; i < 100_000; i++ {
		t = sched.Next(t)
		if t.IsZero() || !t.Before(until) {
			return time.Time{}, false
		}
		if !q.Quiet(t, loc) {
			return t, true
		}
	}
	return time.Time{}, false
}
