package proof

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pdfText is pdftotext's reading of a PDF (Debian's poppler-utils, which
// .ci/run installs).
func pdfText(t *testing.T, pdf []byte) string {
	t.Helper()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Fatal("pdftotext (Debian's poppler-utils) is not installed: .ci/run installs it")
	}
	path := filepath.Join(t.TempDir(), "p.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pdftotext", "-layout", path, "-").CombinedOutput()
	if err != nil {
		t.Fatalf("pdftotext: %v\n%s", err, out)
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// The PDF prints what the customer read in any script its embedded font
// covers, not '?': names in Greek, Cyrillic and Latin Extended,
// currencies (€ ₹ zł ₽ ₺ ₩ £ ¥), typographic quotes and dashes, in the
// fields (subject, subscription) and in the notice's text. The font is
// embedded as a subset: a page stays far under Stripe's 5 MB.
func TestPDFPrintsUnicode(t *testing.T) {
	sent := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	lines := []string{
		"Γεια σας Ελένη Παπαδοπούλου, Здравствуйте, Дмитрий Шостакович!",
		"Zofia Łukasiewicz, Gdańsk: 49,99 zł; Šárka Nováková; Øyvind Ærø; İstanbul 99,90 ₺",
		"₹499.00 — €12.99 – £9.99 — ¥1,299 — ₽990 — ₩15,000 — “quoted” ‘single’ …",
	}
	rec := Record{
		Key: strings.Repeat("ab", 32), KeyPrefix: "abababababab", SubscriptionID: "sub_Ωμέγα", Kind: "renewal_notice_t72",
		PeriodStart: "2026-12-27", Channel: "email", To: "ε***@example.gr", Subject: "Η συνδρομή σας ανανεώνεται — ₹499.00",
		Attempts:    []Attempt{{Attempt: 1, ClaimedAt: sent, SentAt: &sent, ProviderID: "0100018c-ses"}},
		GeneratedAt: sent, MessageSHA256: strings.Repeat("0f", 32), MessageBytes: 2048,
		text: strings.Join(lines, "\n"),
	}
	pdf, err := renderPDF(rec)
	if err != nil {
		t.Fatal(err)
	}
	text := pdfText(t, pdf)
	for _, want := range append(lines, rec.SubscriptionID, rec.Subject, rec.To) {
		if !strings.Contains(text, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("the PDF's text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "?") {
		t.Errorf("the PDF's text has a '?' (a character its font lacks):\n%s", text)
	}
	if len(pdf) > 200<<10 || !bytes.Contains(pdf, []byte("/FontFile2")) {
		t.Errorf("PDF of one page is %d bytes, TrueType embedded %v: want the font embedded as a subset", len(pdf), bytes.Contains(pdf, []byte("/FontFile2")))
	}
	t.Logf("PDF: %d bytes", len(pdf))
}

// A notice Windows-1252 holds (English, German, French, the euro) is set
// in the core fonts: nothing embedded, a few KB, and its text prints.
func TestPDFOfALatin1NoticeEmbedsNoFont(t *testing.T) {
	sent := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	text := "Hallo Jürgen Müller, Ihr Abonnement verlängert sich am 4. März 2026; 12,99 € werden abgebucht. Ça coûte « 9,99 € » — “merci”."
	rec := Record{Key: strings.Repeat("ab", 32), KeyPrefix: "abababababab", SubscriptionID: "sub_1", Kind: "renewal_notice_t72",
		Channel: "email", To: "j***@example.de", Attempts: []Attempt{{Attempt: 1, ClaimedAt: sent, SentAt: &sent}}, GeneratedAt: sent, text: text}
	pdf, err := renderPDF(rec)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(pdf, []byte("/FontFile2")) || len(pdf) > 10<<10 {
		t.Errorf("a Latin-1 notice's PDF is %d bytes, TrueType embedded %v: want the core fonts", len(pdf), bytes.Contains(pdf, []byte("/FontFile2")))
	}
	if got := pdfText(t, pdf); !strings.Contains(got, text) {
		t.Errorf("the PDF's text lacks %q:\n%s", text, got)
	}
}

// BenchmarkRenderPDF: the PDF's share of `scan proof`'s time for one
// notice, in the core fonts (latin1) and with DejaVu Sans parsed and
// subset for the PDF (unicode).
func BenchmarkRenderPDF(b *testing.B) {
	sent := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	for name, line := range map[string]string{
		"latin1":  "Hello User 1, your subscription renews on March 4, 2026, and €12.99 will be charged.\n",
		"unicode": "Hello Ελένη, your subscription renews on March 4, 2026, and ₹499.00 will be charged.\n",
	} {
		rec := Record{Key: strings.Repeat("ab", 32), KeyPrefix: "abababababab", SubscriptionID: "sub_1", Kind: "renewal_notice_t72",
			Channel: "email", Attempts: []Attempt{{Attempt: 1, ClaimedAt: sent, SentAt: &sent}}, GeneratedAt: sent,
			text: strings.Repeat(line, 12)}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := renderPDF(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
