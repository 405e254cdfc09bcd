package message

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"mime"
	"net/mail"
	"slices"
	"strings"
	"testing"
	"time"

	"scan/internal/notice"
	"scan/internal/provider/registry"
)

// referenceRender renders n as Render did before it shared buffers, by
// the standard library wherever it can: every template on text/template
// or html/template, the data from the CLDR translator and ReplaceAll, the
// headers by net/mail and time.Format, the message by mime/multipart and
// mime/quotedprintable (stdlibMIME). ok is false where Render must
// refuse n (a header value with a line break, a header too long).
func referenceRender(t *testing.T, r *Renderer, n notice.Notice) (m notice.Message, ok bool) {
	t.Helper()
	n.Name, n.Plan = cut(n.Name, MaxNameLen), cut(n.Plan, MaxPlanLen)
	v := r.variantFor(n.Kind, n.Locale)
	var parts [3]string
	for i, p := range []struct {
		t *tmpl
		f *localeFormat
	}{{v.subject, v.subjectFmt}, {v.text, v.textFmt}, {v.html, v.htmlFmt}} {
		d := referenceData(r, &n, p.f)
		var b strings.Builder
		var err error
		if p.t.html != nil {
			err = p.t.html.Execute(&b, &d)
		} else {
			err = p.t.text.Execute(&b, &d)
		}
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		parts[i] = b.String()
	}
	m = notice.Message{Subject: strings.TrimSpace(parts[0]), Text: parts[1], HTML: parts[2], MessageID: r.MessageID(n.Key)}
	headers := []header{
		{"From", r.fromHdr},
		{"To", (&mail.Address{Name: n.Name, Address: n.To}).String()},
		{"Subject", mime.QEncoding.Encode("utf-8", m.Subject)},
		{"Date", n.ClaimedAt.UTC().Format(time.RFC1123Z)},
		{"Message-ID", m.MessageID},
		{"MIME-Version", "1.0"},
		{"X-Notice-Key", n.Key},
		{"Auto-Submitted", "auto-generated"},
	}
	if link := r.PreferencesLink(n.CancelToken); link != "" {
		headers = append(headers, header{"List-Unsubscribe", "<" + link + ">"}, header{"List-Unsubscribe-Post", "List-Unsubscribe=One-Click"})
	}
	if r.correlation != nil {
		for _, h := range r.correlation(n.Key, n.Attempt) {
			headers = append(headers, header{h[0], h[1]})
		}
	}
	for _, h := range headers {
		if strings.ContainsAny(h.value, "\r\n") {
			return m, false
		}
	}
	raw, err := stdlibMIME(headers, "=_notice_"+n.Key[:32], m.Text, m.HTML)
	if err != nil {
		return m, false
	}
	if size := mimeSize(headers, "=_notice_"+n.Key[:32], m.Text, m.HTML); len(raw) > size {
		t.Fatalf("a message of %d octets, over mimeSize's %d: buildMIME would allocate twice", len(raw), size)
	}
	m.Raw = raw
	return m, true
}

// referenceData is Renderer.data written with a string per value.
func referenceData(r *Renderer, n *notice.Notice, f *localeFormat) TemplateData {
	zone, anchor := r.zoneAndAnchor(n)
	d := TemplateData{
		Kind: n.Kind, Name: n.Name, Plan: n.Plan,
		RenewsAt:       n.RenewsAt.UTC(),
		PeriodStart:    n.PeriodStart.Format(time.DateOnly),
		CancelURL:      r.CancelLink(n.CancelToken),
		PreferencesURL: r.PreferencesLink(n.CancelToken),
		Amount:         f.amount(n.Amount, n.Currency),
		Interval:       f.intervalText(n.Interval, n.IntervalCount),
		IntervalCount:  countOrOne(n.IntervalCount),
		Locale:         f.name,
		TimeZone:       zone.String(),
	}
	if slices.Contains(intervalUnits[:], n.Interval) {
		d.IntervalUnit = n.Interval
	}
	if !anchor.IsZero() {
		d.AnchorAt = anchor.In(zone)
		d.RenewsOn = f.dates.FmtDateLong(d.AnchorAt)
	}
	return d
}

// checkReference holds m, Render's message for n, to referenceRender's,
// byte for byte.
func checkReference(t *testing.T, r *Renderer, n notice.Notice, m *notice.Message) {
	t.Helper()
	want, ok := referenceRender(t, r, n)
	if !ok {
		t.Fatalf("Render accepted a notice the reference refuses: %+v", n)
	}
	if m.Subject != want.Subject || m.Text != want.Text || m.HTML != want.HTML || m.MessageID != want.MessageID {
		t.Fatalf("Render's parts differ from the reference's:\n%q\n%q\n%q\nwant\n%q\n%q\n%q", m.Subject, m.Text, m.HTML, want.Subject, want.Text, want.HTML)
	}
	if !bytes.Equal(m.Raw, want.Raw) {
		t.Fatalf("Render's message differs from the reference's:\n%s\nwant\n%s", m.Raw, want.Raw)
	}
}

// Render writes, byte for byte, what the standard library's templates,
// net/mail, mime/multipart and mime/quotedprintable write, for notices
// over the edges of every value Render formats (names that need quotes,
// escapes or encoded words, local parts that need quotes, tokens that
// need escaping, locales, zones, amounts), every provider, with and
// without a preferences link, on compiled and reflective templates.
func TestRenderMatchesReference(t *testing.T) {
	t.Parallel()
	names := []string{"", "Ada Lovelace", `Ada "The" Lovelace`, `back\slash`, "Jürgen Müller", "渡辺 美咲", "O'Brien, Pat",
		"a  b", strings.Repeat("x", 150), strings.Repeat("ü", 120), "Zoë (home)", "  spaced  ", "=?utf-8?q?x?=", "tab\there", "a@b <c>"}
	locals := []string{"user1", "o'brien+x", "first.last", "a_b-c", ".dot", "two..dots", "dot.", `q"uote`, "ünï", "sp ace"}
	pick := func(rng *rand.Rand, s []string) string { return s[rng.IntN(len(s))] }
	rng := rand.New(rand.NewPCG(5, 6))
	for _, cfg := range []RenderConfig{
		{From: "Example Box <notices@example.com>", MessageIDDomain: "notices.example.com"},
		{From: "notices@example.com", MessageIDDomain: "Notices.Example.com", Correlation: correlation(t, "ses", "cs-1"),
			PreferencesURL: "https://example.com/prefs?t={token}", DefaultLocale: "de"},
		{From: `"Bäcker & Söhne" <b@example.de>`, MessageIDDomain: "example.de", Correlation: correlation(t, "sendgrid", ""), CancelURL: "https://example.de/k/{token}/x?again={token}"},
		{From: "x@example.org", MessageIDDomain: "example.org", Correlation: correlation(t, "mailgun", ""), PreferencesURL: "http://p.example.org/{token}", Templates: mapFS(fuzzTemplates)},
		{From: "x@example.org", MessageIDDomain: "example.org", Correlation: correlation(t, "postmark", ""), Templates: mapFS(fuzzTemplates)},
	} {
		r, err := NewRenderer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range 400 {
			n := notice.Notice{
				Key: fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()),
				Tuple: notice.Tuple{
					Kind:        pick(rng, []string{"renewal_notice_t72", "trial_ending", "default", "custom", "slow"}),
					PeriodStart: time.Date(2026, time.Month(1+rng.IntN(12)), 1+rng.IntN(28), 0, 0, 0, 0, time.UTC),
				},
				RenewsAt:    time.Date(2026, 3, 4, rng.IntN(24), 30, 0, 0, time.UTC),
				To:          pick(rng, locals) + "@example.org",
				Name:        pick(rng, names),
				Plan:        pick(rng, []string{"", "Pro", "Pro & Co <b>", "Prämie", strings.Repeat("p ", 80)}),
				CancelToken: pick(rng, []string{"tok-1", "a b&c=d/é", "x+y?z#w", strings.Repeat("t", 40)}),
				ClaimedAt:   time.Date(2026, 3, 1, 2, rng.IntN(60), 0, 0, time.FixedZone("x", 3600*rng.IntN(3))),
				Locale:      pick(rng, []string{"", "en", "en-US", "en-GB", "de", "de-AT", "fr", "ja", "xx-bogus", "en-AU"}),
				Interval:    pick(rng, []string{"", "month", "year", "week", "day", "fortnight"}),
				Attempt:     rng.IntN(3),
			}
			n.IntervalCount = rng.IntN(40)
			if rng.IntN(4) > 0 {
				n.Amount, n.Currency = pick(rng, []string{"12.99", "1234.5", "1299", "0.5"}), pick(rng, []string{"USD", "EUR", "JPY", "BHD"})
			}
			if z := pick(rng, []string{"", "Europe/Vienna", "America/New_York", "Asia/Tokyo"}); z != "" {
				n.TimeZone, _ = time.LoadLocation(z)
			}
			if rng.IntN(3) == 0 {
				n.AnchorAt = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
			}
			m, err := r.Render(n)
			if err != nil {
				if _, ok := referenceRender(t, r, n); ok {
					t.Fatalf("Render refused what the reference renders: %v (%+v)", err, n)
				}
				continue
			}
			checkReference(t, r, n, m)
		}
	}
}

// correlation is the registry's correlation headers of provider name.
func correlation(t testing.TB, name, configSet string) func(string, int) [][2]string {
	t.Helper()
	c, err := registry.Correlation(name, configSet)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
