package send

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io/fs"
	"mime"
	"net/mail"
	"net/url"
	"path"
	"strings"
	texttemplate "text/template"
	"time"
	"unicode/utf8"

	"scan/internal/address"
)

// DefaultCancelURL is the RenderConfig.CancelURL used when none is given.
const DefaultCancelURL = "https://example.com/cancel?token={token}"

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
	// Provider names the email provider behind the sender: "" or "none"
	// adds nothing; "ses", "sendgrid", "mailgun" and "postmark" add the
	// header that provider turns into event data, carrying the notice key
	// (see CorrelationHeaders).
	Provider string
	// ConfigurationSet is the Amazon SES configuration set named in an
	// X-SES-CONFIGURATION-SET header (provider "ses" only); optional.
	ConfigurationSet string
	// DefaultLocale (BCP 47) renders a notice whose Locale is empty.
	// Default "en" (issue 21).
	DefaultLocale string
	// DefaultTimeZone formats the dates of a notice whose TimeZone is nil.
	// Default UTC (issue 21).
	DefaultTimeZone *time.Location
	// PreferencesURL, with "{token}", is named by List-Unsubscribe (and
	// List-Unsubscribe-Post, RFC 8058). "": no List-Unsubscribe header.
	// Never the cancel link (issue 21).
	PreferencesURL string
	// Templates optionally overrides the embedded templates. For a notice
	// of kind K the Renderer uses K.subject.tmpl, K.txt.tmpl and
	// K.html.tmpl (text/template, text/template and html/template) from
	// Templates, else from the embedded set, else default.*.tmpl from
	// Templates, else the embedded default.*.tmpl. Each file is looked up
	// on its own. Templates are parsed once, by NewRenderer.
	Templates fs.FS
}

// TemplateData is what a template sees.
type TemplateData struct {
	Kind        string
	Name        string    // display name; may be empty
	Plan        string    // plan name; may be empty
	RenewsAt    time.Time // when the card is charged, UTC
	RenewsOn    string    // RenewsAt's date, e.g. "2 January 2006" (UTC)
	PeriodStart string    // YYYY-MM-DD
	CancelURL   string    // the cancellation link
}

// Renderer turns a Notice into a Message. A Renderer is safe for concurrent
// use; Render does not modify it.
type Renderer struct {
	from      mail.Address
	fromHdr   string
	domain    string
	cancelURL string
	provider  string
	configSet string
	subject   map[string]*texttemplate.Template
	text      map[string]*texttemplate.Template
	html      map[string]*htmltemplate.Template
}

// NewRenderer validates cfg, fills its defaults and parses every template.
func NewRenderer(cfg RenderConfig) (*Renderer, error) {
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
	if err := checkCancelURL(cfg.CancelURL); err != nil {
		return nil, err
	}
	switch cfg.Provider {
	case "", "none", "ses", "sendgrid", "mailgun", "postmark":
	default:
		return nil, fmt.Errorf("send: RenderConfig.Provider %q is not none, ses, sendgrid, mailgun or postmark", cfg.Provider)
	}
	if strings.Trim(cfg.ConfigurationSet, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return nil, errors.New("send: RenderConfig.ConfigurationSet may hold only letters, digits, '-' and '_'")
	}
	r := &Renderer{
		from:      *from,
		fromHdr:   from.String(),
		domain:    strings.ToLower(cfg.MessageIDDomain),
		cancelURL: cfg.CancelURL,
		provider:  cfg.Provider,
		configSet: cfg.ConfigurationSet,
		subject:   map[string]*texttemplate.Template{},
		text:      map[string]*texttemplate.Template{},
		html:      map[string]*htmltemplate.Template{},
	}
	// Embedded first, then the overrides replace them file by file.
	sub, _ := fs.Sub(embedded, "templates")
	if err := r.load(sub); err != nil {
		return nil, fmt.Errorf("send: embedded templates: %w", err)
	}
	if cfg.Templates != nil {
		if err := r.load(cfg.Templates); err != nil {
			return nil, fmt.Errorf("send: RenderConfig.Templates: %w", err)
		}
	}
	return r, nil
}

func checkCancelURL(raw string) error {
	if !strings.Contains(raw, "{token}") {
		return errors.New("send: RenderConfig.CancelURL has no {token}")
	}
	if !address.ValidHeaderValue(raw) || strings.ContainsAny(raw, " <>\"") {
		return errors.New("send: RenderConfig.CancelURL contains a space, control character, quote or angle bracket")
	}
	u, err := url.Parse(strings.ReplaceAll(raw, "{token}", "t"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("send: RenderConfig.CancelURL is not an absolute http(s) URL")
	}
	return nil
}

// load parses every *.subject.tmpl, *.txt.tmpl and *.html.tmpl in fsys.
func (r *Renderer) load(fsys fs.FS) error {
	names, err := fs.Glob(fsys, "*.tmpl")
	if err != nil {
		return err
	}
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		base := path.Base(name)
		switch {
		case strings.HasSuffix(base, ".subject.tmpl"):
			t, err := texttemplate.New(base).Option("missingkey=error").Parse(string(b))
			if err != nil {
				return err
			}
			r.subject[strings.TrimSuffix(base, ".subject.tmpl")] = t
		case strings.HasSuffix(base, ".txt.tmpl"):
			t, err := texttemplate.New(base).Option("missingkey=error").Parse(string(b))
			if err != nil {
				return err
			}
			r.text[strings.TrimSuffix(base, ".txt.tmpl")] = t
		case strings.HasSuffix(base, ".html.tmpl"):
			t, err := htmltemplate.New(base).Option("missingkey=error").Parse(string(b))
			if err != nil {
				return err
			}
			r.html[strings.TrimSuffix(base, ".html.tmpl")] = t
		}
	}
	return nil
}

func pick[T any](m map[string]T, kind string) T {
	if t, ok := m[kind]; ok {
		return t
	}
	return m[defaultKind]
}

// MessageID returns the Message-ID of the notice with key key:
// "<" + the first 32 characters of key + "@" + domain + ">".
func MessageID(key, domain string) string {
	if len(key) > 32 {
		key = key[:32]
	}
	return "<" + key + "@" + domain + ">"
}

// MessageID returns the Message-ID r gives the notice with key key.
func (r *Renderer) MessageID(key string) string { return MessageID(key, r.domain) }

// NoticeKeyTag is the name under which each provider echoes the notice
// key in its events: an SES message tag, a SendGrid unique argument, a
// Mailgun user variable, a Postmark metadata field.
const NoticeKeyTag = "notice_key"

// CorrelationHeaders returns the headers (name, value) that make provider
// echo key in its event data:
//
//   - ses: X-SES-MESSAGE-TAGS: notice_key=KEY (events: mail.tags.notice_key),
//     and X-SES-CONFIGURATION-SET when configSet is not empty; SES removes
//     both before delivery.
//   - sendgrid: X-SMTPAPI: {"unique_args":{"notice_key":"KEY"}} (events:
//     notice_key at the top level).
//   - mailgun: X-Mailgun-Variables: {"notice_key":"KEY"} (events:
//     event-data.user-variables.notice_key).
//   - postmark: X-PM-Metadata-notice_key: KEY (events: Metadata.notice_key).
//
// Any other provider ("" or "none") gets none. key is hex and configSet
// letters, digits, '-' and '_', so no value can hold a line break.
func CorrelationHeaders(provider, key, configSet string) [][2]string {
	switch provider {
	case "ses":
		hs := [][2]string{{"X-SES-MESSAGE-TAGS", NoticeKeyTag + "=" + key}}
		if configSet != "" {
			hs = append(hs, [2]string{"X-SES-CONFIGURATION-SET", configSet})
		}
		return hs
	case "sendgrid":
		return [][2]string{{"X-SMTPAPI", `{"unique_args":{"` + NoticeKeyTag + `":"` + key + `"}}`}}
	case "mailgun":
		return [][2]string{{"X-Mailgun-Variables", `{"` + NoticeKeyTag + `":"` + key + `"}`}}
	case "postmark":
		return [][2]string{{"X-PM-Metadata-" + NoticeKeyTag, key}}
	}
	return nil
}

// CancelLink returns the cancellation link for token.
func (r *Renderer) CancelLink(token string) string {
	return strings.ReplaceAll(r.cancelURL, "{token}", url.QueryEscape(token))
}

// Render renders n into a complete RFC 5322 multipart/alternative message
// with CRLF line endings. It refuses a notice whose Key is not at least 32
// hex characters, whose To, Name or rendered Subject would put a line break
// or control character in a header (ErrHeaderInjection), or that lacks
// ClaimedAt (the Date header) or CancelToken. Render reads no clock: the
// same Notice always renders to the same bytes.
func (r *Renderer) Render(n Notice) (*Message, error) {
	if len(n.Key) < 32 || strings.Trim(n.Key, "0123456789abcdef") != "" {
		return nil, errors.New("render: key is not 32 or more lower-case hex characters")
	}
	if n.To == "" {
		return nil, errors.New("render: notice has no recipient")
	}
	for _, v := range []struct{ field, value string }{{"To", n.To}, {"Name", n.Name}, {"Kind", n.Kind}} {
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
	link := r.CancelLink(n.CancelToken)
	data := TemplateData{
		Kind:        n.Kind,
		Name:        n.Name,
		Plan:        n.Plan,
		RenewsAt:    n.RenewsAt.UTC(),
		RenewsOn:    n.RenewsAt.UTC().Format("2 January 2006"),
		PeriodStart: n.PeriodStart.Format(time.DateOnly),
		CancelURL:   link,
	}

	var subj, text, html bytes.Buffer
	if err := pick(r.subject, n.Kind).Execute(&subj, data); err != nil {
		return nil, fmt.Errorf("render: subject: %w", err)
	}
	if err := pick(r.text, n.Kind).Execute(&text, data); err != nil {
		return nil, fmt.Errorf("render: text: %w", err)
	}
	if err := pick(r.html, n.Kind).Execute(&html, data); err != nil {
		return nil, fmt.Errorf("render: html: %w", err)
	}
	subject := strings.TrimSpace(subj.String())
	if !address.ValidHeaderValue(subject) {
		return nil, fmt.Errorf("render: Subject: %w", ErrHeaderInjection)
	}

	m := &Message{
		Notice:    n,
		From:      r.from.Address,
		MessageID: r.MessageID(n.Key),
		Subject:   subject,
		Text:      text.String(),
		HTML:      html.String(),
	}
	to := (&mail.Address{Name: n.Name, Address: n.To}).String()
	headers := []struct{ name, value string }{
		{"From", r.fromHdr},
		{"To", to},
		{"Subject", mime.QEncoding.Encode("utf-8", subject)},
		{"Date", n.ClaimedAt.UTC().Format(time.RFC1123Z)},
		{"Message-ID", m.MessageID},
		{"MIME-Version", "1.0"},
		{"X-Notice-Key", n.Key},
		{"List-Unsubscribe", "<" + link + ">"},
		{"Auto-Submitted", "auto-generated"},
	}
	for _, h := range CorrelationHeaders(r.provider, n.Key, r.configSet) {
		headers = append(headers, struct{ name, value string }{h[0], h[1]})
	}
	raw, err := buildMIME(headers, "=_notice_"+n.Key[:32], m.Text, m.HTML)
	if err != nil {
		return nil, err
	}
	m.Raw = raw
	return m, nil
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
