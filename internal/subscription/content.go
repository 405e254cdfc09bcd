package subscription

import (
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/currency"
	"golang.org/x/text/language"

	"scan/internal/notice"
	"scan/internal/policy"
)

// What a notice says (issue 21): the optional columns of a source row,
// checked and resolved into the notice.Notice fields.
//
// A bad amount, currency or billing interval makes the row invalid (the
// notice would state a wrong charge); a bad locale or time zone never
// does: the policy's default_locale or default_time_zone takes its place,
// and the notice is counted in Summary.Fallback.

// Reasons a row's content makes it invalid (logged as the reason).
const (
	reasonNegativeAmount   = "negative_amount"
	reasonInvalidAmount    = "invalid_amount"
	reasonUnknownCurrency  = "unknown_currency"
	reasonUnknownInterval  = "unknown_billing_interval"
	reasonInvalidIntervalN = "invalid_billing_interval_count"
)

// Intervals are the values billing_interval takes.
var Intervals = []string{"day", "week", "month", "year"}

// plainDecimal reports whether a is a plain decimal, [+-]digits[.digits]
// (what a numeric column reads as text), and whether it is below zero.
func plainDecimal(a string) (neg, ok bool) {
	if a != "" && (a[0] == '+' || a[0] == '-') {
		neg, a = a[0] == '-', a[1:]
	}
	digits, dot, nonzero := 0, false, false
	for i := 0; i < len(a); i++ {
		switch c := a[i]; {
		case c >= '0' && c <= '9':
			digits++
			nonzero = nonzero || c != '0'
		case c == '.' && !dot && digits > 0 && i < len(a)-1:
			dot = true
		default:
			return false, false
		}
	}
	return neg && nonzero, digits > 0
}

// maxAmount bounds an amount in exponent form: no charge is larger, and a
// text column's 1e999999 must not become a million digits.
const maxAmount = 1e15

// floatAmount reads what a float column prints (1e+06, 1.5e-07): decimal
// digits, a point and an exponent only (no hex, no Inf or NaN), finite and
// at most maxAmount in size.
func floatAmount(a string) (float64, bool) {
	if strings.Trim(a, "0123456789.eE+-") != "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(a, 64)
	if err != nil || math.IsNaN(v) || math.Abs(v) > maxAmount {
		return 0, false
	}
	return v, true
}

// MaxZones bounds the time-zone and locale caches: a data load of
// distinct garbage names cannot grow them without end (the names past it
// are looked up each time).
const MaxZones = 4096

// Content resolves the optional columns of a source row (amount,
// currency, billing interval, locale, time zone) into a notice's fields,
// for one policy. It caches each time zone and locale by name. Not safe
// for concurrent use: Fork gives a resolver with caches of its own.
type Content struct {
	pol       *policy.Policy
	defLocale string
	defZone   *time.Location
	zones     map[string]*time.Location // nil: not a zone
	locales   map[string]string         // canonical tag; "": not a locale
}

// NewContent returns pol's resolver; an error names pol's
// default_time_zone, which does not load.
func NewContent(pol *policy.Policy) (*Content, error) {
	def, err := policy.LoadZone(pol.DefaultTimeZone)
	if err != nil {
		return nil, err
	}
	return &Content{pol: pol, defLocale: pol.DefaultLocale, defZone: def,
		zones: map[string]*time.Location{}, locales: map[string]string{}}, nil
}

// Fork is a resolver of the same policy with caches of its own, for
// another goroutine.
func (c *Content) Fork() *Content {
	d := *c
	d.zones, d.locales = map[string]*time.Location{}, map[string]string{}
	return &d
}

// DefaultZone is the policy's default_time_zone.
func (c *Content) DefaultZone() *time.Location { return c.defZone }

// Fill checks r's content and fills n's content fields. It returns the
// reason r is invalid for a notice of kind k in its jurisdiction, and
// the fallbacks taken ("locale", "time_zone"), which cost nothing.
func (c *Content) Fill(r Row, k policy.Kind, n *notice.Notice) (reason string, fallbacks []string) {
	if reason = c.fillCharge(r, n); reason != "" {
		return reason, nil
	}
	for _, f := range c.pol.Requires(k, str(r.Jurisdiction)) {
		if missing(f, n) {
			return "missing_" + f, nil
		}
	}
	n.Locale = c.defLocale
	if l := strings.TrimSpace(str(r.Locale)); l != "" {
		if tag := c.locale(l); tag != "" {
			n.Locale = tag
		} else {
			fallbacks = append(fallbacks, "locale")
		}
	}
	n.TimeZone = c.defZone
	if z := strings.TrimSpace(str(r.TimeZone)); z != "" {
		if loc := c.zone(z); loc != nil {
			n.TimeZone = loc
		} else {
			fallbacks = append(fallbacks, "time_zone")
		}
	}
	return "", fallbacks
}

// fillCharge checks and fills the amount, currency and billing interval.
func (c *Content) fillCharge(r Row, n *notice.Notice) string {
	if a := strings.TrimSpace(str(r.Amount)); a != "" {
		switch neg, plain := plainDecimal(a); {
		case plain && neg:
			return reasonNegativeAmount
		case plain:
			n.Amount = strings.TrimLeft(a, "+-") // "-0.00" is no charge either way
		default: // a float column's 1e+06, or not a number
			v, ok := floatAmount(a)
			if !ok {
				return reasonInvalidAmount
			}
			if v < 0 {
				return reasonNegativeAmount
			}
			n.Amount = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	if cur := strings.TrimSpace(str(r.Currency)); cur != "" {
		u, err := currency.ParseISO(cur)
		if err != nil {
			return reasonUnknownCurrency
		}
		n.Currency = u.String()
	}
	if n.Amount != "" && n.Currency == "" {
		// An amount in no known currency cannot be stated.
		return "missing_" + policy.FieldCurrency
	}
	if iv := strings.ToLower(strings.TrimSpace(str(r.Interval))); iv != "" {
		if !validInterval(iv) {
			return reasonUnknownInterval
		}
		n.Interval, n.IntervalCount = iv, 1
	}
	if cnt := strings.TrimSpace(str(r.IntervalCount)); cnt != "" {
		v, err := strconv.Atoi(cnt)
		if err != nil || v < 1 {
			return reasonInvalidIntervalN
		}
		if n.Interval != "" {
			n.IntervalCount = v
		}
	}
	return ""
}

func validInterval(s string) bool {
	for _, iv := range Intervals {
		if s == iv {
			return true
		}
	}
	return false
}

// missing reports whether n lacks the requirable field f.
func missing(f string, n *notice.Notice) bool {
	switch f {
	case policy.FieldAmount:
		return n.Amount == ""
	case policy.FieldCurrency:
		return n.Currency == ""
	case policy.FieldBillingInterval:
		return n.Interval == ""
	}
	return false
}

// locale returns the canonical BCP 47 tag of l, "" when l is malformed
// or unknown.
func (c *Content) locale(l string) string {
	if tag, ok := c.locales[l]; ok {
		return tag
	}
	tag := ""
	if t, err := language.Parse(l); err == nil && t != language.Und {
		tag = t.String()
	}
	if len(c.locales) < MaxZones {
		c.locales[l] = tag
	}
	return tag
}

// zone returns the IANA zone named name, nil when there is none.
func (c *Content) zone(name string) *time.Location {
	if loc, ok := c.zones[name]; ok {
		return loc
	}
	loc, err := policy.LoadZone(name)
	if err != nil {
		loc = nil
	}
	if len(c.zones) < MaxZones {
		c.zones[name] = loc
	}
	return loc
}

// ZoneOf returns the zone of r's recipient: its time_zone, else the
// policy's default_time_zone (as Fill resolves it).
func (c *Content) ZoneOf(r Row) *time.Location {
	if z := strings.TrimSpace(str(r.TimeZone)); z != "" {
		if loc := c.zone(z); loc != nil {
			return loc
		}
	}
	return c.defZone
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
