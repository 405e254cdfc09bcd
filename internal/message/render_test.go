package message_test

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"
	"unicode/utf8"

	"scan/internal/message"
	"scan/internal/notice"
	"scan/internal/provider/registry"
)

func TestMessageID(t *testing.T) {
	t.Parallel()
	k := key("x")
	if got, want := message.MessageID(k, "n.example.com"), "<"+k[:32]+"@n.example.com>"; got != want {
		t.Fatalf("MessageID = %q, want %q", got, want)
	}
}

func TestRenderHeaders(t *testing.T) {
	t.Parallel()
	r := newRenderer(t)
	n := sample(1, "example.org")
	m := render(t, r, n)

	if bytes.Contains(bytes.ReplaceAll(m.Raw, []byte("\r\n"), nil), []byte("\n")) ||
		bytes.Contains(bytes.ReplaceAll(m.Raw, []byte("\r\n"), nil), []byte("\r")) {
		t.Fatal("Raw has a bare CR or LF")
	}
	msg, err := mail.ReadMessage(bytes.NewReader(m.Raw))
	if err != nil {
		t.Fatal(err)
	}
	h := msg.Header
	link := "https://example.com/cancel?token=tok-1"
	for name, want := range map[string]string{
		"From":         `"Example Box" <notices@example.com>`,
		"To":           `"Ada Lovelace" <user1@example.org>`,
		"Subject":      "Your Pro subscription renews on March 4, 2026",
		"Date":         "Sun, 01 Mar 2026 02:00:00 +0000",
		"Message-Id":   "<" + n.Key[:32] + "@notices.example.com>",
		"Mime-Version": "1.0",
		"X-Notice-Key": n.Key,
		// No preferences_url: no List-Unsubscribe, never the cancel link.
		"List-Unsubscribe":      "",
		"List-Unsubscribe-Post": "",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if m.MessageID != h.Get("Message-Id") || m.From != "notices@example.com" || m.Subject != h.Get("Subject") {
		t.Errorf("Message fields = %q %q %q", m.MessageID, m.From, m.Subject)
	}
	if strings.Contains(string(m.Raw), n.SubscriptionID) {
		t.Error("Raw contains the subscription id")
	}

	mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type = %q (%v)", h.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var types []string
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.Header.Get("Content-Transfer-Encoding") != "quoted-printable" {
			t.Errorf("part encoding = %q", p.Header.Get("Content-Transfer-Encoding"))
		}
		body, err := io.ReadAll(quotedprintable.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		ct := p.Header.Get("Content-Type")
		types = append(types, ct)
		want := []string{"March 4, 2026", "Pro", "Ada Lovelace"}
		if strings.HasPrefix(ct, "text/html") {
			want = append(want, `href="`+link+`"`)
		} else {
			want = append(want, link)
		}
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s part lacks %q:\n%s", ct, w, body)
			}
		}
	}
	if strings.Join(types, ",") != "text/plain; charset=utf-8,text/html; charset=utf-8" {
		t.Errorf("parts = %v", types)
	}
}

func TestRenderDeterministicAndCancelLink(t *testing.T) {
	t.Parallel()
	r := newRenderer(t)
	a := sample(1, "example.org")
	a2 := render(t, r, a)
	if b := render(t, r, a); !bytes.Equal(a2.Raw, b.Raw) {
		t.Fatal("same notice rendered differently")
	}
	// A corrected revision: new key, same token, same link.
	rev := a
	rev.Revision = 1
	rev.Key = key("rev")
	m1, m2 := a2, render(t, r, rev)
	if l1 := r.CancelLink(a.CancelToken); !strings.Contains(m1.Text, l1) || !strings.Contains(m2.Text, l1) {
		t.Error("same CancelToken gave different links")
	}
	if m1.MessageID == m2.MessageID {
		t.Error("different keys gave one Message-ID")
	}
	// Tokens are query-escaped.
	odd := a
	odd.CancelToken = "a b&c=d"
	if got := r.CancelLink(odd.CancelToken); got != "https://example.com/cancel?token=a+b%26c%3Dd" {
		t.Errorf("CancelLink = %q", got)
	}
	if _, err := r.Render(odd); err != nil {
		t.Error(err)
	}
}

func TestRenderNoPlanNoName(t *testing.T) {
	t.Parallel()
	n := sample(1, "example.org")
	n.Plan, n.Name = "", ""
	m := render(t, newRenderer(t), n)
	if m.Subject != "Your subscription renews on March 4, 2026" {
		t.Errorf("Subject = %q", m.Subject)
	}
	if !strings.HasPrefix(m.Text, "Hello,") {
		t.Errorf("Text starts %q", m.Text[:20])
	}
}

func TestRenderRefuses(t *testing.T) {
	t.Parallel()
	r := newRenderer(t)
	tests := []struct {
		name   string
		mut    func(*notice.Notice)
		inject bool
	}{
		{"crlf in to", func(n *notice.Notice) { n.To = "a@example.org\r\nBcc: x@example.org" }, true},
		{"lf in name", func(n *notice.Notice) { n.Name = "Ada\nBcc: x@example.org" }, true},
		{"cr in name", func(n *notice.Notice) { n.Name = "Ada\r" }, true},
		{"nul in to", func(n *notice.Notice) { n.To = "a\x00@example.org" }, true},
		{"short key", func(n *notice.Notice) { n.Key = "abc" }, false},
		{"upper key", func(n *notice.Notice) { n.Key = strings.ToUpper(n.Key) }, false},
		{"no recipient", func(n *notice.Notice) { n.To = "" }, false},
		{"no claimed at", func(n *notice.Notice) { n.ClaimedAt = time.Time{} }, false},
		{"no token", func(n *notice.Notice) { n.CancelToken = "" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := sample(1, "example.org")
			tt.mut(&n)
			m, err := r.Render(n)
			if err == nil {
				t.Fatalf("Render = %q, want an error", m.Raw)
			}
			if got := errors.Is(err, message.ErrHeaderInjection); got != tt.inject {
				t.Errorf("Render error %v: ErrHeaderInjection = %v", err, got)
			}
		})
	}
}

func TestRenderTemplates(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"renewal_notice_t72.subject.tmpl": {Data: []byte("Prämie {{.Plan}} – {{.RenewsOn}}\n")},
		"renewal_notice_t72.txt.tmpl":     {Data: []byte("custom {{.CancelURL}}\n")},
		"broken.subject.tmpl":             {Data: []byte("line one\nline two")},
	}
	r, err := message.NewRenderer(message.RenderConfig{
		From:            "notices@example.com",
		MessageIDDomain: "notices.example.com",
		Templates:       fsys,
	})
	if err != nil {
		t.Fatal(err)
	}
	n := sample(1, "example.org")
	m := render(t, r, n)
	if m.Subject != "Prämie Pro – March 4, 2026" {
		t.Errorf("Subject = %q", m.Subject)
	}
	if !strings.Contains(string(m.Raw), "Subject: =?utf-8?q?") {
		t.Errorf("Subject not RFC 2047 encoded:\n%s", m.Raw)
	}
	msg, _ := mail.ReadMessage(bytes.NewReader(m.Raw))
	if got, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); got != m.Subject {
		t.Errorf("decoded Subject = %q", got)
	}
	if m.Text != "custom "+message.DefaultCancelURL[:len(message.DefaultCancelURL)-len("{token}")]+"tok-1\n" {
		t.Errorf("Text = %q", m.Text)
	}
	if !strings.Contains(m.HTML, "<!DOCTYPE html>") {
		t.Error("HTML did not fall back to the embedded default")
	}
	// An unknown kind gets the defaults.
	n.Kind = "something_else"
	if m := render(t, r, n); m.Subject != "Your Pro subscription renews on March 4, 2026" {
		t.Errorf("default Subject = %q", m.Subject)
	}
	// A template that renders a line break into Subject is refused.
	n.Kind = "broken"
	if _, err := r.Render(n); !errors.Is(err, message.ErrHeaderInjection) {
		t.Errorf("Render(broken) error = %v", err)
	}
}

func TestRenderHTMLEscapes(t *testing.T) {
	t.Parallel()
	n := sample(1, "example.org")
	n.Name = `<script>alert(1)</script>`
	n.Plan = `"Pro" & more`
	m := render(t, newRenderer(t), n)
	if strings.Contains(m.HTML, "<script>") {
		t.Error("HTML not escaped")
	}
	if !strings.Contains(m.Text, "<script>") {
		t.Error("text part should carry the name as is")
	}
}

func TestNewRendererErrors(t *testing.T) {
	t.Parallel()
	good := message.RenderConfig{From: "a@example.com", MessageIDDomain: "n.example.com"}
	tests := []struct {
		name string
		mut  func(*message.RenderConfig)
		want string
	}{
		{"no from", func(c *message.RenderConfig) { c.From = "" }, "From"},
		{"bad from", func(c *message.RenderConfig) { c.From = "not an address" }, "From"},
		{"crlf from", func(c *message.RenderConfig) { c.From = "a@example.com\r\nBcc: b@example.com" }, "From"},
		{"no domain", func(c *message.RenderConfig) { c.MessageIDDomain = "" }, "MessageIDDomain"},
		{"bad domain", func(c *message.RenderConfig) { c.MessageIDDomain = "a b" }, "MessageIDDomain"},
		{"no token", func(c *message.RenderConfig) { c.CancelURL = "https://example.com/cancel" }, "CancelURL"},
		{"relative", func(c *message.RenderConfig) { c.CancelURL = "/cancel?t={token}" }, "CancelURL"},
		{"angle", func(c *message.RenderConfig) { c.CancelURL = "https://example.com/<{token}>" }, "CancelURL"},
		{"bad template", func(c *message.RenderConfig) {
			c.Templates = fstest.MapFS{"x.txt.tmpl": {Data: []byte("{{.Nope")}}
		}, "Templates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := good
			tt.mut(&cfg)
			_, err := message.NewRenderer(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewRenderer error = %v, want one naming %s", err, tt.want)
			}
		})
	}
	if _, err := message.NewRenderer(good); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRender renders whole messages: "plain" the test notice (no
// amount, English), "amount" a German-speaking Austrian's with an amount,
// a currency, a billing interval and a zone, for SES with a preferences
// link. cpu-ns/op counts the garbage collector's work too.
func BenchmarkRender(b *testing.B) {
	vienna, err := time.LoadLocation("Europe/Vienna")
	if err != nil {
		b.Fatal(err)
	}
	ses, err := message.NewRenderer(message.RenderConfig{
		From:            "Example Box <notices@example.com>",
		MessageIDDomain: "notices.example.com",
		PreferencesURL:  "https://example.com/reminders?token={token}",
		Correlation:     sesCorrelation(b),
	})
	if err != nil {
		b.Fatal(err)
	}
	amount := sample(1, "example.at")
	amount.Name, amount.Locale, amount.TimeZone = "Jörg Gruber", "de-AT", vienna
	amount.Amount, amount.Currency, amount.Interval, amount.IntervalCount = "12.99", "EUR", "month", 1
	for _, bc := range []struct {
		name string
		r    *message.Renderer
		n    notice.Notice
	}{
		{"plain", newRenderer(b), sample(1, "example.org")},
		{"amount", ses, amount},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := bc.r.Render(bc.n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var encodedWord = regexp.MustCompile(`=\?[^?\s]+\?[QqBb]\?[^?\s]*\?=`)

// A name or plan of any length (a text column holds up to 1 GB) is cut at
// its cap, and every header line stays within RFC 5322's 998 octets, folded
// at 78 where it can be, with every encoded word within RFC 2047's 75
// characters. Unfolded, the headers say what was meant.
func TestRenderLongNameAndPlan(t *testing.T) {
	t.Parallel()
	r := newRenderer(t)
	const mib = 1 << 20
	for _, tc := range []struct {
		name, value string
	}{
		{"ascii, one word", strings.Repeat("a", mib)},
		{"ascii, words", strings.Repeat("Ada ", mib/4)},
		{"quotes and backslashes", strings.Repeat(`"\ `, mib/3)},
		{"latin-1", strings.Repeat("é", mib/2)},
		{"cjk with spaces", strings.Repeat("漢字 ", mib/4)},
		{"emoji", strings.Repeat("👩‍👩‍👧", mib/18)},
		{"at the cap", strings.Repeat("ü", message.MaxNameLen)},
		{"3000 characters", strings.Repeat("x", 3000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := sample(1, "example.org")
			n.Name, n.Plan = tc.value, tc.value
			m := render(t, r, n)
			head, _, _ := bytes.Cut(m.Raw, []byte("\r\n\r\n"))
			for _, line := range strings.Split(string(head), "\r\n") {
				if len(line) > 998 {
					t.Errorf("header line of %d octets: %.80q...", len(line), line)
				}
				// Longer than 78 only where no fold point is left: one
				// encoded word or one quoted name.
				if len(line) > 78 && (strings.Contains(line, "?= ") || strings.Contains(line, `" <`)) {
					t.Errorf("a line of %d octets was not folded at a space: %q", len(line), line)
				}
				for _, w := range encodedWord.FindAllString(line, -1) {
					if len(w) > 75 {
						t.Errorf("encoded word of %d characters: %q", len(w), w)
					}
				}
			}
			msg, err := mail.ReadMessage(bytes.NewReader(m.Raw))
			if err != nil {
				t.Fatal(err)
			}
			wantName := tc.value
			if utf8.RuneCountInString(tc.value) > message.MaxNameLen {
				wantName = strings.TrimRight(string([]rune(tc.value)[:message.MaxNameLen-1]), " \t") + "…"
			}
			to, err := mail.ParseAddress(msg.Header.Get("To"))
			if err != nil {
				t.Fatalf("To %q: %v", msg.Header.Get("To"), err)
			}
			if to.Name != wantName || to.Address != n.To {
				t.Errorf("To = %q <%s>, want %q <%s>", to.Name, to.Address, wantName, n.To)
			}
			subj, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(subj, wantName) || !strings.Contains(m.Text, wantName) {
				t.Errorf("Subject %q or text does not name the plan cut to %d characters", subj, message.MaxPlanLen)
			}
		})
	}
}

// A custom subject template that writes one word longer than a header line
// may be is refused, never sent as a line a server would reject.
func TestRenderRefusesUnfoldableSubject(t *testing.T) {
	t.Parallel()
	r, err := message.NewRenderer(message.RenderConfig{From: "n@example.com", MessageIDDomain: "example.com",
		Templates: fstest.MapFS{"default.subject.tmpl": {Data: []byte(strings.Repeat("x", 1200))}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Render(sample(1, "example.org")); !errors.Is(err, message.ErrHeaderTooLong) {
		t.Fatalf("err = %v, want ErrHeaderTooLong", err)
	}
}

// sesCorrelation is SES's correlation headers, from the registry.
func sesCorrelation(b *testing.B) func(string, int) [][2]string {
	c, err := registry.Correlation("ses", "")
	if err != nil {
		b.Fatal(err)
	}
	return c
}
