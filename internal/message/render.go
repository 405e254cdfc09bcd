package message

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/language"

	"scan/internal/address"
	"scan/internal/notice"
)

// DefaultCancelURL is the RenderConfig.CancelURL used when none is given.
const DefaultCancelURL = "https://example.com/cancel?token={token}"

// DefaultLocale is the RenderConfig.DefaultLocale used when none is given.
const DefaultLocale = "en"

// defaultKind names the templates used for a kind that has none of its own.
const defaultKind = "default"

//go:embed templates/*.tmpl
var embedded embed.FS

// ErrHeaderInjection is the cause of a Render error for a header value that
// contains CR or LF (or another control character).
var ErrHeaderInjection = errors.New("send: header value contains a line break or control character")

// MaxNameLen and MaxPlanLen cap Notice.Name and Notice.Plan, in
// characters (runes): Render cuts a longer value to its first
// MaxNameLen-1 (MaxPlanLen-1) characters followed by "…". A source column
// of type text holds up to 1 GB; a name or plan beyond the cap is almost
// certainly bad data, but the customer still gets the notice (a row is
// never refused for a long name).
const (
	MaxNameLen = 100
	MaxPlanLen = 100
)

// ErrHeaderTooLong is the cause of a Render error for a header that cannot
// be folded into lines of at most 998 octets (a word of a custom subject
// template longer than that).
var ErrHeaderTooLong = errors.New("send: header has a word longer than RFC 5322's 998-octet line")

// RenderConfig configures a Renderer. From and MessageIDDomain are required.
type RenderConfig struct {
	// From is the header From, "Name <addr>" or "addr". Its address is also
	// the envelope sender.
	From string
	// MessageIDDomain is the right-hand side of every Message-ID.
	MessageIDDomain string
	// CancelURL is the cancellation link; "{token}" is replaced by the
	// notice's query-escaped CancelToken. It must be an absolute http or
	// https URL containing "{token}". Default DefaultCancelURL.
	CancelURL string
	// Correlation returns the headers (name, value) that make the email
	// provider behind the sender echo a notice's key and attempt in its
	// event data; nil adds none (no provider: plain SMTP, the outbox, an
	// HTTP endpoint). Each provider's package has its own; cmd/scan takes
	// the policy's from the provider registry (registry.Correlation). No
	// value it returns may hold a line break.
	Correlation func(key string, attempt int) [][2]string
	// DefaultLocale (BCP 47) selects the templates and formats of a notice
	// whose Locale is empty, malformed or unknown, or has no templates of
	// its own language. It must be a known tag. Default DefaultLocale
	// ("en").
	DefaultLocale string
	// DefaultTimeZone is the zone of the dates of a notice whose TimeZone
	// is nil. Default UTC.
	DefaultTimeZone *time.Location
	// PreferencesURL is the reminder-preferences link; "{token}" is
	// replaced by the notice's query-escaped CancelToken (the token the
	// ledger already maps to the subscription; the link is another
	// endpoint, which changes reminders only). With it every message
	// carries List-Unsubscribe: <link> and List-Unsubscribe-Post:
	// List-Unsubscribe=One-Click (RFC 8058). It must be an absolute
	// http(s) URL containing "{token}", and must not have the cancel
	// link's host and path. "" (the default): no List-Unsubscribe header;
	// the cancel link is never named there.
	PreferencesURL string
	// Templates optionally adds templates to the embedded set and
	// overrides it file by file. A template file is named
	// <kind>.<locale>.<part>.tmpl or <kind>.<part>.tmpl, where part is
	// subject (text/template), txt (text/template) or html
	// (html/template) and locale a BCP 47 tag ("de-AT"). For a notice of
	// kind K in locale L each part is looked up on its own, first found
	// wins: K.L, K.<each CLDR parent of L> (de-AT, then de), then
	// K.<DefaultLocale> and the locale-less K, then the same for
	// "default". At each step a file in Templates comes before the
	// embedded one; at the default-locale step the locale-less file in
	// Templates comes before the embedded K.<DefaultLocale>, because a
	// locale-less template is written in the default locale. Templates
	// are parsed once, by NewRenderer, and each (kind, locale) is
	// resolved once.
	Templates fs.FS
}

// TemplateData is what a template sees. Every field is a plain value,
// computed once per notice; an unknown value is the zero value (""), never
// "<no value>", so a template can omit a sentence with {{with}} or {{if}}.
type TemplateData struct {
	Kind string
	Name string // display name; may be empty
	Plan string // plan name; may be empty
	// RenewsAt is when the card is charged, UTC.
	RenewsAt time.Time
	// AnchorAt is the date the kind is anchored on (Notice.AnchorAt, else
	// RenewsAt: a trial's end, a price change), in TimeZone.
	AnchorAt time.Time
	// RenewsOn is AnchorAt's date, CLDR's long date for Locale:
	// "March 4, 2026" (en), "4 March 2026" (en-GB), "4. März 2026" (de).
	RenewsOn    string
	PeriodStart string // YYYY-MM-DD
	CancelURL   string // the cancellation link
	// PreferencesURL is the reminder-preferences link (the one
	// List-Unsubscribe names); "" without RenderConfig.PreferencesURL.
	PreferencesURL string
	// Amount is the charge with its currency, formatted for Locale from
	// CLDR: "$12.99" (en-US), "12,99 €" (de), "€ 12,99" (de-AT), "¥1,299"
	// (en, JPY). "" when the amount or currency is unknown.
	Amount string
	// Interval words the billing interval for Locale: "every month",
	// "every 3 months", "jeden Monat", "alle 3 Monate". "" when unknown or
	// in a language other than English and German; IntervalUnit and
	// IntervalCount then let a template word it itself.
	Interval      string
	IntervalUnit  string // "day", "week", "month", "year" or ""
	IntervalCount int    // Intervals per billing period, at least 1
	// Locale is the BCP 47 tag Amount, Interval and RenewsOn are formatted
	// for: the notice's locale when the text template is in its language,
	// else the text template's (the default locale).
	Locale string
	// TimeZone is the IANA name of the zone of AnchorAt and RenewsOn.
	TimeZone string
}

// Renderer turns a Notice into a Message. A Renderer is safe for concurrent
// use; Render does not modify what it renders with (it caches the
// templates and formats of each kind and locale it meets).
type Renderer struct {
	from      mail.Address
	fromHdr   string
	domain    string
	cancelURL string
	prefsURL  string
	// The links split around their first "{token}" (see fill).
	cancelPre, cancelPost, prefsPre, prefsPost string
	correlation                                func(key string, attempt int) [][2]string

	dir, embedded templateSet
	defaultLocale language.Tag
	defaultZone   *time.Location
	defaultFormat *localeFormat
	variants      sync.Map // variantKey -> *variant
	nvariants     atomic.Int64
	formats       sync.Map  // language.Tag -> *localeFormat
	scratches     sync.Pool // *renderScratch
}

// NewRenderer validates cfg, fills its defaults and parses every template.
func NewRenderer(cfg RenderConfig) (*Renderer, error) {
	from, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	r := &Renderer{
		from:        *from,
		fromHdr:     from.String(),
		domain:      strings.ToLower(cfg.MessageIDDomain),
		cancelURL:   cfg.CancelURL,
		prefsURL:    cfg.PreferencesURL,
		correlation: cfg.Correlation,
		defaultZone: cfg.DefaultTimeZone,
	}
	if r.defaultZone == nil {
		r.defaultZone = time.UTC
	}
	r.cancelPre, r.cancelPost, _ = strings.Cut(r.cancelURL, "{token}")
	r.prefsPre, r.prefsPost, _ = strings.Cut(r.prefsURL, "{token}")
	r.defaultLocale, _ = parseLocale(cfg.DefaultLocale)
	sub, _ := fs.Sub(embedded, "templates")
	if r.embedded, err = parseTemplates(sub); err != nil {
		return nil, fmt.Errorf("send: embedded templates: %w", err)
	}
	if cfg.Templates != nil {
		if r.dir, err = parseTemplates(cfg.Templates); err != nil {
			return nil, fmt.Errorf("send: RenderConfig.Templates: %w", err)
		}
	}
	r.defaultFormat = newLocaleFormat(r.defaultLocale, nil)
	r.formats.Store(r.defaultLocale, r.defaultFormat)
	return r, nil
}

// validate checks cfg, fills its defaults and returns its From.
func (cfg *RenderConfig) validate() (*mail.Address, error) {
	if cfg.From == "" {
		return nil, errors.New("send: RenderConfig.From is empty")
	}
	if !address.ValidHeaderValue(cfg.From) {
		return nil, fmt.Errorf("RenderConfig.From: %w", ErrHeaderInjection)
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("send: RenderConfig.From: %w", err)
	}
	if _, err := address.Parse(from.Address); err != nil {
		return nil, fmt.Errorf("send: RenderConfig.From address: %w", err)
	}
	if cfg.MessageIDDomain == "" {
		return nil, errors.New("send: RenderConfig.MessageIDDomain is empty")
	}
	if _, err := address.Parse("x@" + cfg.MessageIDDomain); err != nil {
		return nil, fmt.Errorf("send: RenderConfig.MessageIDDomain %q is not a domain", cfg.MessageIDDomain)
	}
	if cfg.CancelURL == "" {
		cfg.CancelURL = DefaultCancelURL
	}
	if err := checkLinkURL("CancelURL", cfg.CancelURL); err != nil {
		return nil, err
	}
	if err := cfg.checkPreferencesURL(); err != nil {
		return nil, err
	}
	if cfg.DefaultLocale == "" {
		cfg.DefaultLocale = DefaultLocale
	}
	if _, ok := parseLocale(cfg.DefaultLocale); !ok {
		return nil, fmt.Errorf("send: RenderConfig.DefaultLocale %q is not a known BCP 47 tag", cfg.DefaultLocale)
	}
	return from, nil
}

// checkLinkURL checks the link template raw of RenderConfig.field: an
// absolute http(s) URL with "{token}" and nothing that could break out of
// a header's angle brackets.
func checkLinkURL(field, raw string) error {
	if !strings.Contains(raw, "{token}") {
		return fmt.Errorf("send: RenderConfig.%s has no {token}", field)
	}
	if !address.ValidHeaderValue(raw) || strings.ContainsAny(raw, " <>\"") {
		return fmt.Errorf("send: RenderConfig.%s contains a space, control character, quote or angle bracket", field)
	}
	u, err := url.Parse(strings.ReplaceAll(raw, "{token}", "t"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("send: RenderConfig.%s is not an absolute http(s) URL", field)
	}
	return nil
}

// checkPreferencesURL checks PreferencesURL, when set, and refuses one
// that leads where the cancel link does (same scheme, host and path): a
// mail client's one-click "Unsubscribe" must never cancel a plan.
func (cfg *RenderConfig) checkPreferencesURL() error {
	if cfg.PreferencesURL == "" {
		return nil
	}
	if err := checkLinkURL("PreferencesURL", cfg.PreferencesURL); err != nil {
		return err
	}
	p, _ := url.Parse(strings.ReplaceAll(cfg.PreferencesURL, "{token}", "t"))
	c, _ := url.Parse(strings.ReplaceAll(cfg.CancelURL, "{token}", "t"))
	if strings.EqualFold(p.Scheme, c.Scheme) && strings.EqualFold(p.Host, c.Host) && p.Path == c.Path {
		return errors.New("send: RenderConfig.PreferencesURL leads to the cancel link (same host and path): List-Unsubscribe must never cancel")
	}
	return nil
}

// MessageID returns the Message-ID header of the notice with key key:
// notice.MessageID between angle brackets.
func MessageID(key, domain string) string {
	return "<" + notice.MessageID(key, domain) + ">"
}

// MessageID returns the Message-ID r gives the notice with key key.
func (r *Renderer) MessageID(key string) string { return MessageID(key, r.domain) }

// CancelLink returns the cancellation link for token.
func (r *Renderer) CancelLink(token string) string {
	return strings.ReplaceAll(r.cancelURL, "{token}", url.QueryEscape(token))
}

// PreferencesLink returns the reminder-preferences link for token, or ""
// without RenderConfig.PreferencesURL.
func (r *Renderer) PreferencesLink(token string) string {
	if r.prefsURL == "" {
		return ""
	}
	return strings.ReplaceAll(r.prefsURL, "{token}", url.QueryEscape(token))
}

// appendListUnsubscribe appends the List-Unsubscribe headers of a notice
// with token to headers: the preferences link with RFC 8058's one-click
// POST, or none without RenderConfig.PreferencesURL. Never the cancel
// link: a mail client shows "Unsubscribe" for this header, and
// unsubscribing from reminders must not cancel a plan. The link is
// query-escaped and PreferencesURL checked, so no value holds a line
// break. The link is a view of sc (renderScratch.appendView).
func (r *Renderer) appendListUnsubscribe(headers []header, sc *renderScratch, token string) []header {
	if r.prefsURL == "" {
		return headers
	}
	link := sc.appendView(func(b []byte) []byte {
		b = appendLink(append(b, '<'), r.prefsPre, r.prefsPost, r.prefsURL, url.QueryEscape(token))
		return append(b, '>')
	})
	return append(headers, header{"List-Unsubscribe", link}, header{"List-Unsubscribe-Post", "List-Unsubscribe=One-Click"})
}

// renderScratch is the working memory of one Render: the values
// TemplateData holds only while the templates run (the dates, the links),
// then the templates' output, then the To and Date header values. Render
// takes one from the Renderer's pool and returns it when done, so the
// buffer is allocated once per worker rather than grown per message.
// Nothing Render returns points into it: the Message's strings and Raw
// are copies, allocated for the Message alone.
type renderScratch struct{ b []byte }

// maxScratch is the largest buffer a renderScratch goes back to the pool
// with (an odd operator template may need more, once).
const maxScratch = 64 << 10

func (r *Renderer) scratch() *renderScratch {
	if sc, ok := r.scratches.Get().(*renderScratch); ok {
		sc.b = sc.b[:0]
		return sc
	}
	return &renderScratch{b: make([]byte, 0, 4096)}
}

func (r *Renderer) release(sc *renderScratch) {
	if cap(sc.b) <= maxScratch {
		r.scratches.Put(sc)
	}
}

// appendView appends what add appends to the scratch buffer and returns
// it as a string that shares the buffer's memory. The string is valid
// for the rest of the Render: the buffer is only appended to until Render
// returns it to the pool (a growth leaves the string on the old array,
// unchanged), and no such string outlives the Render.
func (sc *renderScratch) appendView(add func([]byte) []byte) string {
	from := len(sc.b)
	sc.b = add(sc.b)
	return unsafe.String(unsafe.SliceData(sc.b[from:]), len(sc.b)-from)
}

// execute runs n's templates (the Render steps before MIME assembly):
// it resolves the templates and formats of n's kind and locale (cached),
// builds the data and returns the trimmed subject, the text and the HTML,
// three strings of one allocation of their own. n is already checked;
// Name and Plan are already cut. sc is the Render's scratch.
func (r *Renderer) execute(sc *renderScratch, n *notice.Notice) (subject, text, html string, err error) {
	v := r.variantFor(n.Kind, n.Locale)
	data := r.data(sc, n, v.textFmt)
	subjectData, htmlData := &data, &data
	if v.subjectFmt != v.textFmt {
		d := r.data(sc, n, v.subjectFmt)
		subjectData = &d
	}
	if v.htmlFmt != v.textFmt {
		d := r.data(sc, n, v.htmlFmt)
		htmlData = &d
	}
	// The three outputs, one after the other in the scratch buffer.
	s0 := len(sc.b)
	if sc.b, err = v.subject.execute(sc.b, subjectData); err != nil {
		return "", "", "", fmt.Errorf("render: subject: %w", err)
	}
	t0 := len(sc.b)
	if sc.b, err = v.text.execute(sc.b, &data); err != nil {
		return "", "", "", fmt.Errorf("render: text: %w", err)
	}
	h0 := len(sc.b)
	if sc.b, err = v.html.execute(sc.b, htmlData); err != nil {
		return "", "", "", fmt.Errorf("render: html: %w", err)
	}
	all := string(sc.b[s0:])
	subject = strings.TrimSpace(all[:t0-s0])
	if !address.ValidHeaderValue(subject) {
		return "", "", "", fmt.Errorf("render: Subject: %w", ErrHeaderInjection)
	}
	return subject, all[t0-s0 : h0-s0], all[h0-s0:], nil
}

// appendLink appends the link template link with every "{token}"
// replaced by the escaped token; pre and post are link split around its
// first one. It is CancelLink's ReplaceAll without the intermediate
// strings.
func appendLink(dst []byte, pre, post, link, token string) []byte {
	if strings.Contains(post, "{token}") {
		return append(dst, strings.ReplaceAll(link, "{token}", token)...)
	}
	dst = append(dst, pre...)
	dst = append(dst, token...)
	return append(dst, post...)
}

// zoneAndAnchor returns the zone of n's dates (its own, else the
// default) and the date its window is measured from (AnchorAt, else
// RenewsAt).
func (r *Renderer) zoneAndAnchor(n *notice.Notice) (*time.Location, time.Time) {
	zone := n.TimeZone
	if zone == nil {
		zone = r.defaultZone
	}
	anchor := n.AnchorAt
	if anchor.IsZero() {
		anchor = n.RenewsAt
	}
	return zone, anchor
}

// data is what n's templates see, formatted by f. Its dates and links
// are views of sc, valid for this Render (renderScratch.appendView).
func (r *Renderer) data(sc *renderScratch, n *notice.Notice, f *localeFormat) TemplateData {
	zone, anchor := r.zoneAndAnchor(n)
	token := url.QueryEscape(n.CancelToken)
	d := TemplateData{
		Kind:     n.Kind,
		Name:     n.Name,
		Plan:     n.Plan,
		RenewsAt: n.RenewsAt.UTC(),
		PeriodStart: sc.appendView(func(b []byte) []byte {
			return n.PeriodStart.AppendFormat(b, time.DateOnly)
		}),
		CancelURL: sc.appendView(func(b []byte) []byte {
			return appendLink(b, r.cancelPre, r.cancelPost, r.cancelURL, token)
		}),
		Amount:        f.amount(n.Amount, n.Currency),
		Interval:      f.intervalText(n.Interval, n.IntervalCount),
		IntervalCount: countOrOne(n.IntervalCount),
		Locale:        f.name,
		TimeZone:      zone.String(),
	}
	if r.prefsURL != "" {
		d.PreferencesURL = sc.appendView(func(b []byte) []byte {
			return appendLink(b, r.prefsPre, r.prefsPost, r.prefsURL, token)
		})
	}
	if slices.Contains(intervalUnits[:], n.Interval) {
		d.IntervalUnit = n.Interval
	}
	if !anchor.IsZero() {
		d.AnchorAt = anchor.In(zone)
		d.RenewsOn = f.date(d.AnchorAt)
	}
	return d
}

// Render renders n into a complete RFC 5322 multipart/alternative message
// with CRLF line endings. It refuses a notice whose Key is not at least 32
// hex characters, whose To, Name or rendered Subject would put a line break
// or control character in a header (ErrHeaderInjection), or that lacks
// ClaimedAt (the Date header) or CancelToken. Render reads no clock: the
// same Notice always renders to the same bytes.
func (r *Renderer) Render(n notice.Notice) (*notice.Message, error) {
	if len(n.Key) < 32 || strings.Trim(n.Key, "0123456789abcdef") != "" {
		return nil, errors.New("render: key is not 32 or more lower-case hex characters")
	}
	if n.To == "" {
		return nil, errors.New("render: notice has no recipient")
	}
	for _, v := range [...]struct{ field, value string }{{"To", n.To}, {"Name", n.Name}, {"Kind", n.Kind}} {
		if !address.ValidHeaderValue(v.value) {
			return nil, fmt.Errorf("render: %s: %w", v.field, ErrHeaderInjection)
		}
	}
	if n.ClaimedAt.IsZero() {
		return nil, errors.New("render: notice has no ClaimedAt (the Date header)")
	}
	if n.CancelToken == "" {
		return nil, errors.New("render: notice has no CancelToken")
	}
	n.Name, n.Plan = cut(n.Name, MaxNameLen), cut(n.Plan, MaxPlanLen)
	sc := r.scratch()
	defer r.release(sc)
	subject, text, html, err := r.execute(sc, &n)
	if err != nil {
		return nil, err
	}
	m := &notice.Message{
		Notice:    n,
		From:      r.from.Address,
		MessageID: r.MessageID(n.Key),
		Subject:   subject,
		Text:      text,
		HTML:      html,
	}
	if m.Raw, err = r.assemble(sc, m); err != nil {
		return nil, err
	}
	return m, nil
}

// assemble returns m's RFC 5322 bytes (buildMIME): its headers, then its
// text and HTML. The header values Render computes per message (To,
// Date, the boundary) are views of sc.
func (r *Renderer) assemble(sc *renderScratch, m *notice.Message) ([]byte, error) {
	n := &m.Notice
	var hs [16]header
	headers := append(hs[:0],
		header{"From", r.fromHdr},
		header{"To", sc.appendView(func(b []byte) []byte { return appendAddress(b, n.Name, n.To) })},
		header{"Subject", sc.appendView(func(b []byte) []byte { return appendQEncoded(b, m.Subject) })},
		header{"Date", sc.appendView(func(b []byte) []byte { return n.ClaimedAt.UTC().AppendFormat(b, time.RFC1123Z) })},
		header{"Message-ID", m.MessageID},
		header{"MIME-Version", "1.0"},
		header{"X-Notice-Key", n.Key},
		header{"Auto-Submitted", "auto-generated"},
	)
	headers = r.appendListUnsubscribe(headers, sc, n.CancelToken)
	if r.correlation != nil {
		for _, h := range r.correlation(n.Key, n.Attempt) {
			headers = append(headers, header{h[0], h[1]})
		}
	}
	boundary := sc.appendView(func(b []byte) []byte { return append(append(b, "=_notice_"...), n.Key[:32]...) })
	return buildMIME(headers, boundary, m.Text, m.HTML)
}

// appendAddress appends the To header's value for name and addr: what
// (&mail.Address{Name: name, Address: addr}).String() returns, written in
// place for the usual cases (a local part that needs no quotes, and a
// display name of printable ASCII, which is quoted, or one that net/mail
// Q-encodes) and by net/mail otherwise.
func appendAddress(dst []byte, name, addr string) []byte {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 || !dotAtom(addr[:at]) {
		return append(dst, (&mail.Address{Name: name, Address: addr}).String()...)
	}
	switch {
	case !printableASCII(name):
		// net/mail writes a name with these characters in base64.
		if strings.ContainsAny(name, "\"#$%&'(),.:;<>@[]^`{|}~") {
			return append(dst, (&mail.Address{Name: name, Address: addr}).String()...)
		}
		dst = append(appendQEncoded(dst, name), ' ')
	case name != "":
		dst = append(dst, '"')
		for i := 0; i < len(name); i++ {
			if c := name[i]; c == '"' || c == '\\' {
				dst = append(dst, '\\')
			}
			dst = append(dst, name[i])
		}
		dst = append(dst, '"', ' ')
	}
	dst = append(dst, '<')
	dst = append(dst, addr...)
	return append(dst, '>')
}

// dotAtom reports whether net/mail writes the local part s as it is: a
// non-empty run of atext and single inner dots (RFC 5322 3.2.3), in
// ASCII.
func dotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		case c < '!' || c > '~' || strings.IndexByte(`()<>[]:;@\,"`, c) >= 0:
			return false
		}
	}
	return true
}

// printableASCII reports whether every octet of s is printable ASCII, a
// space or a tab: a display name net/mail only quotes.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '!' || c > '~') && c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// cut returns s, or when it has more than max characters its first max-1
// followed by "…". s is valid UTF-8 (Render checked it).
func cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	k := 0
	for i := range s {
		if k == max-1 {
			return strings.TrimRight(s[:i], " \t") + "…"
		}
		k++
	}
	return s
}
