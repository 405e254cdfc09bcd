package message

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/bojanz/currency"
	"github.com/go-playground/locales"
	"golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/message/catalog"
)

// A localeFormat formats a notice's amount, interval and date for one
// locale, all from CLDR data: amounts by github.com/bojanz/currency (CLDR
// symbols, patterns and fraction digits, with CLDR's locale inheritance:
// "de" gives "12,99 €", "de-AT" "€ 12,99", "en-US" "$12.99"), dates by
// github.com/go-playground/locales (the CLDR long date: "4. März 2026",
// "March 4, 2026"), and the interval's plural form by CLDR's plural rules
// (golang.org/x/text/feature/plural) over the words in intervalCatalog.
// Built once per locale (Renderer.format) and safe for concurrent use.
type localeFormat struct {
	tag   language.Tag
	name  string // tag.String()
	dates locales.Translator
	money *currency.Formatter
	// amounts caches formatted amounts by value and currency: a business
	// has a few price points, and a decimal parse and format is a third
	// of the data's cost. At most maxCachedAmounts are kept.
	amounts  sync.Map // [2]string{value, code} -> string
	namounts atomic.Int64
	// interval[unit][count-1] for count 1..len: every wording precomputed,
	// so a notice costs a slice index. nil for a language the catalog
	// lacks.
	interval map[string][]string
	printer  *message.Printer // counts past the precomputed ones
	// longDates caches formatted dates by calendar date: a pass's
	// notices fall on the few dates of its windows, and a CLDR long date
	// costs a formatting and an allocation. At most maxCachedDates.
	longDates  sync.Map // int (year<<9 | month<<5 | day) -> string
	nlongDates atomic.Int64
}

// precomputedCounts is how many counts of each interval unit a
// localeFormat words in advance (36 months covers every plan seen).
const precomputedCounts = 36

// intervalUnits are the Notice.Interval values.
var intervalUnits = [...]string{"day", "week", "month", "year"}

// intervalCatalog holds the wording of a billing interval, as an adverbial
// phrase ("every 3 months"), in the shipped languages. CLDR has unit names
// ("3 months") but no maintained Go library exposes them, and a sentence
// needs the phrase, so the words live here, as a message catalog like any
// other translation; which form a count takes (one, other, ...) is CLDR's
// plural rule for the language. A language the catalog lacks gets no
// wording (TemplateData.Interval ""); its templates can word
// IntervalUnit and IntervalCount themselves.
var intervalCatalog = sync.OnceValue(func() catalog.Catalog {
	b := catalog.NewBuilder()
	set := func(tag language.Tag, unit, one, other string) {
		if err := b.Set(tag, "interval."+unit, plural.Selectf(1, "%d", plural.One, one, plural.Other, other)); err != nil {
			panic(err) // the messages below are constants
		}
	}
	set(language.English, "day", "every day", "every %d days")
	set(language.English, "week", "every week", "every %d weeks")
	set(language.English, "month", "every month", "every %d months")
	set(language.English, "year", "every year", "every %d years")
	set(language.German, "day", "jeden Tag", "alle %d Tage")
	set(language.German, "week", "jede Woche", "alle %d Wochen")
	set(language.German, "month", "jeden Monat", "alle %d Monate")
	set(language.German, "year", "jedes Jahr", "alle %d Jahre")
	return b
})

// newLocaleFormat builds the formatters for tag. dflt is the default
// locale's translator, for a language without CLDR dates here.
func newLocaleFormat(tag language.Tag, dflt locales.Translator) *localeFormat {
	f := &localeFormat{tag: tag, name: tag.String(), dates: datesFor(tag), money: currency.NewFormatter(currency.NewLocale(tag.String()))}
	if f.dates == nil {
		f.dates = dflt
	}
	if f.dates == nil {
		f.dates = cldrDates["en"]()
	}
	cat := intervalCatalog()
	if _, _, conf := cat.Matcher().Match(tag); conf == language.No {
		return f
	}
	f.printer = message.NewPrinter(tag, message.Catalog(cat))
	f.interval = make(map[string][]string, len(intervalUnits))
	for _, u := range intervalUnits {
		ws := make([]string, precomputedCounts)
		for i := range ws {
			ws[i] = f.printer.Sprintf("interval."+u, i+1)
		}
		f.interval[u] = ws
	}
	return f
}

//go:generate go run ../../tools/gencldr

// datesFor returns the CLDR date translator of tag or of its nearest
// parent that has one (de-AT, then de), or nil. The translators are
// cldrDates, which tools/gencldr writes (cldr_dates.go).
func datesFor(tag language.Tag) locales.Translator {
	for t := tag; ; t = t.Parent() {
		if mk, ok := cldrDates[t.String()]; ok {
			return mk()
		}
		if t.IsRoot() {
			return nil
		}
	}
}

// amount formats value (a decimal in major units) in currency code, or
// returns "" when either is missing or not valid: an amount the pass
// passed on is valid, and a message without the sentence is better than
// one with a wrong figure.
func (f *localeFormat) amount(value, code string) string {
	if value == "" || code == "" {
		return ""
	}
	k := [2]string{value, code}
	if s, ok := f.amounts.Load(k); ok {
		return s.(string)
	}
	var s string
	if a, err := currency.NewAmount(value, code); err == nil {
		s = f.money.Format(a)
	}
	if f.namounts.Add(1) <= maxCachedAmounts {
		f.amounts.Store(k, s)
	}
	return s
}

// maxCachedAmounts bounds the amounts a localeFormat keeps.
const maxCachedAmounts = 4096

// intervalText words count units ("every 3 months"); "" for an unknown
// unit or a language without the words. A count under 1 means 1.
func (f *localeFormat) intervalText(unit string, count int) string {
	ws, ok := f.interval[unit]
	if !ok {
		return ""
	}
	if count < 1 {
		count = 1
	}
	if count <= len(ws) {
		return ws[count-1]
	}
	return f.printer.Sprintf("interval."+unit, count)
}

// date formats t's calendar date, in t's location, as CLDR's long date.
func (f *localeFormat) date(t time.Time) string {
	y, m, d := t.Date()
	k := y<<9 | int(m)<<5 | d
	if s, ok := f.longDates.Load(k); ok {
		return s.(string)
	}
	s := f.dates.FmtDateLong(t)
	if f.nlongDates.Add(1) <= maxCachedDates {
		f.longDates.Store(k, s)
	}
	return s
}

// maxCachedDates bounds the dates a localeFormat keeps: about three
// years of days.
const maxCachedDates = 1024

// countOrOne is IntervalCount as templates see it.
func countOrOne(n int) int {
	if n < 1 {
		return 1
	}
	return n
}
