package message_test

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"scan/internal/message"
	"scan/internal/notice"
	"scan/internal/send"
	"scan/internal/smtptest"
)

const nbsp = "\u00a0"

func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	z, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// priced returns notice i with an amount, currency, interval and locale.
func priced(i int, locale, amount, currency string) notice.Notice {
	n := sample(i, "example.org")
	n.Locale, n.Amount, n.Currency = locale, amount, currency
	n.Interval, n.IntervalCount = "month", 1
	return n
}

// Each notice gets the templates of its language, and its amount and date
// formatted from CLDR for its own locale: German and Austrian notices read
// German (de-AT falls back to the de templates) with the amount and the
// date as each region writes them, en-US gets "$", and a tag that is
// malformed or names no known language renders in the default locale.
func TestRenderLocales(t *testing.T) {
	t.Parallel()
	r := newRenderer(t)
	jan := time.Date(2027, 1, 4, 9, 30, 0, 0, time.UTC)
	tests := []struct {
		name                 string
		n                    notice.Notice
		subject, date, money string
		text                 []string
	}{
		{"de", priced(1, "de", "12.99", "EUR"), "Ihr Abonnement „Pro“ verlängert sich am 4. März 2026", "4. März 2026", "12,99" + nbsp + "€",
			[]string{"Guten Tag Ada Lovelace,", "Dann werden 12,99" + nbsp + "€ von der hinterlegten Zahlungsmethode abgebucht, danach jeden Monat, bis Sie kündigen."}},
		{"de-DE, thousands", priced(2, "de-DE", "1234.5", "EUR"), "", "4. März 2026", "1.234,50" + nbsp + "€", nil},
		// CLDR's Austrian German puts the symbol first, and January is
		// Jänner.
		{"de-AT", func() notice.Notice { n := priced(3, "de-AT", "12.99", "EUR"); n.RenewsAt = jan; return n }(),
			"Ihr Abonnement „Pro“ verlängert sich am 4. Jänner 2027", "4. Jänner 2027", "€" + nbsp + "12,99", []string{"Guten Tag"}},
		{"de-CH, francs", priced(4, "de-CH", "12.9", "CHF"), "", "4. März 2026", "CHF" + nbsp + "12.90", nil},
		{"en-US", priced(5, "en-US", "12.99", "USD"), "Your Pro subscription renews on March 4, 2026", "March 4, 2026", "$12.99",
			[]string{"Hello Ada Lovelace,", "and $12.99 will be charged to the payment method on file, then every month until you cancel."}},
		{"en-GB", priced(6, "en-GB", "12.99", "GBP"), "Your Pro subscription renews on 4 March 2026", "4 March 2026", "£12.99", nil},
		{"yen has no minor unit", priced(7, "en", "1299", "JPY"), "", "March 4, 2026", "¥1,299", nil},
		{"dinar has three", priced(8, "en", "1.5", "BHD"), "", "March 4, 2026", "BHD" + nbsp + "1.500", nil},
		{"no locale", priced(9, "", "12.99", "USD"), "Your Pro subscription renews on March 4, 2026", "March 4, 2026", "$12.99", nil},
		{"unknown language", priced(10, "xx-YY", "12.99", "USD"), "Your Pro subscription renews on March 4, 2026", "March 4, 2026", "$12.99", nil},
		{"malformed", priced(11, "not a locale!", "12.99", "USD"), "Your Pro subscription renews on March 4, 2026", "March 4, 2026", "$12.99", nil},
		// French has no templates: English text, so English formats.
		{"no templates in its language", priced(12, "fr-FR", "12.99", "EUR"), "Your Pro subscription renews on March 4, 2026", "March 4, 2026", "€12.99", nil},
		{"case", priced(13, "DE_at", "12.99", "EUR"), "", "4. März 2026", "€" + nbsp + "12,99", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := render(t, r, tt.n)
			if tt.subject != "" && m.Subject != tt.subject {
				t.Errorf("Subject = %q, want %q", m.Subject, tt.subject)
			}
			for _, part := range []string{m.Text, m.HTML} {
				for _, w := range []string{tt.date, tt.money} {
					if !strings.Contains(part, w) {
						t.Errorf("lacks %q:\n%s", w, part)
					}
				}
				if strings.Contains(part, "<no value>") {
					t.Errorf("<no value> in\n%s", part)
				}
			}
			for _, w := range tt.text {
				if !strings.Contains(m.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, m.Text)
				}
			}
		})
	}
}

// The date is the anchor's (AnchorAt, else RenewsAt), in the recipient's
// zone, else the renderer's default zone, else UTC.
func TestRenderDateZoneAndAnchor(t *testing.T) {
	t.Parallel()
	late := time.Date(2026, 3, 4, 23, 30, 0, 0, time.UTC) // 5 March in Vienna, 4 March in Los Angeles
	utc := newRenderer(t)
	la, err := message.NewRenderer(message.RenderConfig{From: "n@example.com", MessageIDDomain: "example.com",
		DefaultTimeZone: zone(t, "America/Los_Angeles")})
	if err != nil {
		t.Fatal(err)
	}
	tokyo, err := message.NewRenderer(message.RenderConfig{From: "n@example.com", MessageIDDomain: "example.com",
		DefaultTimeZone: zone(t, "Asia/Tokyo")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		r      *message.Renderer
		mut    func(*notice.Notice)
		prefix string
	}{
		{"UTC by default", utc, func(*notice.Notice) {}, "Ihr Abonnement „Pro“ verlängert sich am 4. März 2026"},
		{"the recipient's zone", utc, func(n *notice.Notice) { n.TimeZone = zone(t, "Europe/Vienna") }, "Ihr Abonnement „Pro“ verlängert sich am 5. März 2026"},
		{"the default zone", tokyo, func(*notice.Notice) {}, "Ihr Abonnement „Pro“ verlängert sich am 5. März 2026"},
		{"the recipient's before the default", tokyo, func(n *notice.Notice) { n.TimeZone = zone(t, "America/Los_Angeles") }, "Ihr Abonnement „Pro“ verlängert sich am 4. März 2026"},
		{"west of UTC", la, func(*notice.Notice) {}, "Ihr Abonnement „Pro“ verlängert sich am 4. März 2026"},
		{"the anchor", utc, func(n *notice.Notice) { n.AnchorAt = time.Date(2026, 2, 18, 12, 0, 0, 0, time.UTC) }, "Ihr Abonnement „Pro“ verlängert sich am 18. Februar 2026"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := priced(1, "de", "12.99", "EUR")
			n.RenewsAt = late
			tt.mut(&n)
			if m := render(t, tt.r, n); m.Subject != tt.prefix {
				t.Errorf("Subject = %q, want %q", m.Subject, tt.prefix)
			}
		})
	}
}

// Without an amount the sentence about it is left out; an interval is
// worded in the notice's language with CLDR's plural rules; nothing
// unknown ever renders as "<no value>".
func TestRenderAmountAndInterval(t *testing.T) {
	t.Parallel()
	r := newRenderer(t)
	for _, tt := range []struct {
		name     string
		mut      func(*notice.Notice)
		want     []string
		dontWant []string
	}{
		{"no amount", func(n *notice.Notice) { n.Amount = "" }, []string{"and the payment method on file will be charged then."}, []string{"will be charged to", "$"}},
		{"no currency", func(n *notice.Notice) { n.Currency = "" }, []string{"will be charged then."}, []string{"12.99"}},
		{"unknown currency", func(n *notice.Notice) { n.Currency = "XYZ" }, []string{"will be charged then."}, []string{"12.99"}},
		{"not a number", func(n *notice.Notice) { n.Amount = "twelve" }, []string{"will be charged then."}, []string{"twelve"}},
		{"no interval", func(n *notice.Notice) { n.Interval = "" }, []string{"$12.99 will be charged to the payment method on file."}, []string{"then every"}},
		{"unknown interval", func(n *notice.Notice) { n.Interval = "fortnight" }, []string{"on file."}, []string{"then every", "fortnight"}},
		{"count 0 is 1", func(n *notice.Notice) { n.IntervalCount = 0 }, []string{"then every month until"}, nil},
		{"three months", func(n *notice.Notice) { n.IntervalCount = 3 }, []string{"then every 3 months until"}, nil},
		{"a year", func(n *notice.Notice) { n.Interval = "year" }, []string{"then every year until"}, nil},
		{"past the precomputed counts", func(n *notice.Notice) { n.Interval, n.IntervalCount = "week", 104 }, []string{"then every 104 weeks until"}, nil},
		{"German plural", func(n *notice.Notice) { n.Locale, n.Currency, n.IntervalCount = "de", "EUR", 3 }, []string{"danach alle 3 Monate, bis Sie kündigen"}, nil},
		{"German year", func(n *notice.Notice) { n.Locale, n.Interval = "de", "year" }, []string{"danach jedes Jahr, bis"}, nil},
		{"no name, no plan", func(n *notice.Notice) { n.Name, n.Plan = "", "" }, []string{"Hello,", "Your subscription renews"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := priced(1, "en-US", "12.99", "USD")
			tt.mut(&n)
			m := render(t, r, n)
			for _, w := range tt.want {
				if !strings.Contains(m.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, m.Text)
				}
			}
			for _, w := range append(tt.dontWant, "<no value>") {
				if strings.Contains(m.Text, w) || strings.Contains(m.HTML, w) {
					t.Errorf("message has %q:\n%s", w, m.Text)
				}
			}
		})
	}
}

// A custom template sees the new fields too.
func TestRenderTemplateDataFields(t *testing.T) {
	t.Parallel()
	r, err := message.NewRenderer(message.RenderConfig{From: "n@example.com", MessageIDDomain: "example.com",
		PreferencesURL: "https://example.com/reminders?t={token}",
		Templates: fstest.MapFS{"default.txt.tmpl": {Data: []byte(
			"{{.Amount}}|{{.Interval}}|{{.IntervalUnit}}|{{.IntervalCount}}|{{.Locale}}|{{.TimeZone}}|{{.RenewsOn}}|{{.AnchorAt.Format \"2006-01-02 15:04\"}}|{{.RenewsAt.Format \"15:04\"}}|{{.PreferencesURL}}|{{.CancelURL}}")}}})
	if err != nil {
		t.Fatal(err)
	}
	n := priced(1, "en-GB", "7", "EUR")
	n.IntervalCount, n.TimeZone = 2, zone(t, "Europe/London")
	m := render(t, r, n)
	want := "€7.00|every 2 months|month|2|en-GB|Europe/London|4 March 2026|2026-03-04 09:30|09:30|https://example.com/reminders?t=tok-1|https://example.com/cancel?token=tok-1"
	if m.Text != want {
		t.Errorf("text = %q\nwant   %q", m.Text, want)
	}
	// Absent values are empty, not "<no value>".
	m = render(t, r, sample(2, "example.org"))
	if want := "|||1|en|UTC|March 4, 2026|2026-03-04 09:30|09:30|https://example.com/reminders?t=tok-2|https://example.com/cancel?token=tok-2"; m.Text != want {
		t.Errorf("text = %q\nwant   %q", m.Text, want)
	}
}

// Each template file falls back on its own: the full locale, its CLDR
// parent, the default locale, the locale-less kind, then default.*, and
// at each step templates_dir before the embedded file. A locale-less file
// in templates_dir is in the default locale: it overrides the shipped
// default-locale file (as it overrode the shipped default.* before
// locales), not the shipped German one.
func TestRenderTemplateFallback(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"renewal.de-AT.subject.tmpl":  {Data: []byte("renewal de-AT")},
		"renewal.de.subject.tmpl":     {Data: []byte("renewal de")},
		"renewal.subject.tmpl":        {Data: []byte("renewal")},
		"trial.de.txt.tmpl":           {Data: []byte("trial de {{.Amount}}")},
		"default.subject.tmpl":        {Data: []byte("custom default {{.RenewsOn}}")},
		"default.fr.subject.tmpl":     {Data: []byte("défaut {{.RenewsOn}}")},
		"default.de_ch.subject.tmpl":  {Data: []byte("Schweiz {{.RenewsOn}}")},
		"renewal.v2.subject.tmpl":     {Data: []byte("a kind with a dot")},
		"notes.md":                    {Data: []byte("not a template")},
		"other.en.subject.tmpl":       {Data: []byte("other en")},
		"other.subject.tmpl":          {Data: []byte("other")},
		"other.de.html.tmpl":          {Data: []byte("<p>other de</p>")},
		"default.en-001.subject.tmpl": {Data: []byte("international {{.RenewsOn}}")},
	}
	r, err := message.NewRenderer(message.RenderConfig{From: "n@example.com", MessageIDDomain: "example.com", Templates: fsys})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		kind, locale string
		subject      string
		text         string // a prefix
	}{
		{"renewal", "de-AT", "renewal de-AT", "Guten Tag"},
		{"renewal", "de", "renewal de", "Guten Tag"},
		{"renewal", "de-CH", "renewal de", "Guten Tag"},
		{"renewal", "en", "renewal", "Hello"},
		{"renewal", "fr", "renewal", "Hello"},
		{"renewal.v2", "de", "a kind with a dot", "Guten Tag"},
		{"trial", "de-AT", "Ihr Abonnement „Pro“ verlängert sich am 4. März 2026", "trial de €" + nbsp + "12,99"},
		{"trial", "en", "custom default March 4, 2026", "Hello"},
		{"trial", "", "custom default March 4, 2026", "Hello"},
		{"trial", "fr-CA", "défaut 4 mars 2026", "Hello"},
		{"trial", "de-CH", "Schweiz 4. März 2026", "trial de €" + nbsp + "12.99"},
		{"trial", "en-AU", "international 4 March 2026", "Hello"},
		// The default locale's file before the locale-less one.
		{"other", "de", "other en", "Guten Tag"},
		{"other", "en", "other en", "Hello"},
	} {
		t.Run(tt.kind+"/"+tt.locale, func(t *testing.T) {
			t.Parallel()
			n := priced(1, tt.locale, "12.99", "EUR")
			n.Kind = tt.kind
			m := render(t, r, n)
			if m.Subject != tt.subject {
				t.Errorf("Subject = %q, want %q", m.Subject, tt.subject)
			}
			if !strings.HasPrefix(m.Text, tt.text) {
				t.Errorf("text = %q, want it to start %q", m.Text, tt.text)
			}
		})
	}
}

// The embedded locale-less templates are the English ones: the final
// fallback reads as the English default does.
func TestEmbeddedLocaleLessIsEnglish(t *testing.T) {
	t.Parallel()
	r, err := message.NewRenderer(message.RenderConfig{From: "n@example.com", MessageIDDomain: "example.com", DefaultLocale: "fr"})
	if err != nil {
		t.Fatal(err)
	}
	// fr has no templates: the locale-less embedded (English) ones, in
	// English formats.
	m := render(t, r, priced(1, "", "12.99", "EUR"))
	en := render(t, newRenderer(t), priced(1, "en", "12.99", "EUR"))
	if m.Subject != en.Subject || m.Text != en.Text || m.HTML != en.HTML {
		t.Errorf("locale-less default differs from default.en:\n%s\n---\n%s", m.Text, en.Text)
	}
	if !strings.Contains(m.Text, "€12.99") || !strings.Contains(m.Text, "March 4, 2026") {
		t.Errorf("English text with French formats:\n%s", m.Text)
	}
	// A German default locale: a notice without a locale reads German.
	de, err := message.NewRenderer(message.RenderConfig{From: "n@example.com", MessageIDDomain: "example.com", DefaultLocale: "de-AT"})
	if err != nil {
		t.Fatal(err)
	}
	if m := render(t, de, priced(1, "", "12.99", "EUR")); !strings.Contains(m.Text, "€"+nbsp+"12,99") || !strings.HasPrefix(m.Text, "Guten Tag") {
		t.Errorf("default de-AT:\n%s", m.Text)
	}
}

func header(t *testing.T, raw []byte) mail.Header {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return msg.Header
}

// List-Unsubscribe never names the cancel link: without a preferences
// URL there is none; with one it names the preferences link, with RFC
// 8058's one-click POST, and the body offers it beside the cancel link.
func TestListUnsubscribeNeverCancels(t *testing.T) {
	t.Parallel()
	prefs, err := message.NewRenderer(message.RenderConfig{From: "n@example.com", MessageIDDomain: "example.com",
		CancelURL:      "https://example.com/cancel?token={token}",
		PreferencesURL: "https://example.com/reminders/{token}?from=email"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		r          *message.Renderer
		want, post string
	}{
		{"without preferences_url", newRenderer(t), "", ""},
		{"with preferences_url", prefs, "<https://example.com/reminders/a+b%26c?from=email>", "List-Unsubscribe=One-Click"},
	} {
		for _, locale := range []string{"en", "de"} {
			n := priced(1, locale, "12.99", "EUR")
			n.CancelToken = "a b&c"
			m := render(t, tt.r, n)
			h := header(t, m.Raw)
			cancel := tt.r.CancelLink(n.CancelToken)
			if got := h.Get("List-Unsubscribe"); got != tt.want || strings.Contains(got, cancel) || strings.Contains(got, "cancel") {
				t.Errorf("%s/%s: List-Unsubscribe = %q, want %q", tt.name, locale, got, tt.want)
			}
			if got := h.Get("List-Unsubscribe-Post"); got != tt.post {
				t.Errorf("%s/%s: List-Unsubscribe-Post = %q, want %q", tt.name, locale, got, tt.post)
			}
			if !strings.Contains(m.Text, cancel) {
				t.Errorf("%s/%s: the body lost the cancel link", tt.name, locale)
			}
			if link := tt.r.PreferencesLink(n.CancelToken); link != "" && (!strings.Contains(m.Text, link) || !strings.Contains(m.HTML, `href="https://example.com/reminders/`)) {
				t.Errorf("%s/%s: the body does not offer the preferences link", tt.name, locale)
			}
		}
	}
}

func TestNewRendererPreferencesAndLocale(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  message.RenderConfig
		want string
	}{
		{"the cancel link", message.RenderConfig{CancelURL: "https://example.com/cancel?token={token}", PreferencesURL: "https://EXAMPLE.com/cancel?t={token}&prefs=1"}, "PreferencesURL"},
		{"the default cancel link", message.RenderConfig{PreferencesURL: message.DefaultCancelURL}, "PreferencesURL"},
		{"no token", message.RenderConfig{PreferencesURL: "https://example.com/prefs"}, "PreferencesURL"},
		{"relative", message.RenderConfig{PreferencesURL: "/prefs?t={token}"}, "PreferencesURL"},
		{"angle", message.RenderConfig{PreferencesURL: "https://example.com/>{token}"}, "PreferencesURL"},
		{"crlf", message.RenderConfig{PreferencesURL: "https://example.com/{token}\r\nBcc: x@example.org"}, "PreferencesURL"},
		{"malformed locale", message.RenderConfig{DefaultLocale: "english please"}, "DefaultLocale"},
		{"unknown locale", message.RenderConfig{DefaultLocale: "xx"}, "DefaultLocale"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			cfg.From, cfg.MessageIDDomain = "n@example.com", "example.com"
			if _, err := message.NewRenderer(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewRenderer error = %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// A German notice with an amount goes through a real SMTP server intact:
// the server's copy is the rendered message, byte for byte, and its
// decoded parts say what the renderer said.
func TestRenderLocalisedOverSMTP(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1})
	r, err := message.NewRenderer(message.RenderConfig{From: "Beispiel <n@example.com>", MessageIDDomain: "example.com",
		PreferencesURL: "https://example.com/reminders?token={token}"})
	if err != nil {
		t.Fatal(err)
	}
	n := priced(1, "de-AT", "1234.5", "EUR")
	n.Name, n.IntervalCount, n.TimeZone = "Jürgen Müller", 3, zone(t, "Europe/Vienna")
	m := render(t, r, n)
	if _, err := s.Send(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	got := srv.Messages()
	if len(got) != 1 || !bytes.Equal(bytes.TrimSuffix(got[0].Raw, []byte("\r\n")), bytes.TrimSuffix(m.Raw, []byte("\r\n"))) {
		t.Fatalf("the server got something else: %d messages", len(got))
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got[0].Raw))
	if err != nil {
		t.Fatal(err)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil || subject != "Ihr Abonnement „Pro“ verlängert sich am 4. März 2026" {
		t.Errorf("Subject = %q (%v)", subject, err)
	}
	if to, err := mail.ParseAddress(msg.Header.Get("To")); err != nil || to.Name != "Jürgen Müller" {
		t.Errorf("To = %q (%v)", msg.Header.Get("To"), err)
	}
	if lu := msg.Header.Get("List-Unsubscribe"); lu != "<https://example.com/reminders?token=tok-1>" {
		t.Errorf("List-Unsubscribe = %q", lu)
	}
	_, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for _, want := range []string{m.Text, m.HTML} {
		p, err := mr.NextRawPart()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(quotedprintable.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != strings.ReplaceAll(strings.ReplaceAll(want, "\r\n", "\n"), "\n", "\r\n") && string(body) != want {
			t.Errorf("part differs:\n%s\n---\n%s", body, want)
		}
		if !strings.Contains(string(body), "€"+nbsp+"1.234,50") || !strings.Contains(string(body), "alle 3 Monate") {
			t.Errorf("part lacks the amount or the interval:\n%s", body)
		}
	}
}
