package proof

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/go-fonts/dejavu/dejavusans"
	"github.com/go-pdf/fpdf"
	"golang.org/x/text/encoding/charmap"
)

// maxPDF is Stripe's limit for a dispute's evidence file.
const maxPDF = 5 << 20

// fontUnicode is the family of DejaVu Sans, the TrueType font a PDF whose
// text Windows-1252 cannot hold is set in: embedded as a subset of the
// glyphs the page uses (fpdf's UTF-8 fonts), so names, currencies (₹ zł ₽
// ₺), Greek and Cyrillic print as the customer read them. No CJK, Indic
// or Thai glyphs, and Arabic and Hebrew are not shaped: docs/proof.md.
const fontUnicode = "DejaVuSans"

// face is the fonts one PDF is set in, each a family and a style, and the
// translation its strings need.
type face struct {
	bold, regular, mono [2]string
	tr                  func(string) string
}

// faceFor chooses the fonts for a PDF of texts: the core fonts (Helvetica,
// Courier: nothing embedded, under 0.5 ms) when Windows-1252 holds every
// character, as it does for English, German, French, Spanish and the other
// Western European notices; else DejaVu Sans, one font for every part
// (parsing and subsetting it costs about 6 ms of CPU, each further font as
// much again).
func faceFor(pdf *fpdf.Fpdf, texts ...string) face {
	if cp1252(texts...) {
		return face{bold: [2]string{"Helvetica", "B"}, regular: [2]string{"Helvetica", ""}, mono: [2]string{"Courier", ""},
			tr: pdf.UnicodeTranslatorFromDescriptor("")}
	}
	pdf.AddUTF8FontFromBytes(fontUnicode, "", dejavusans.TTF)
	u := [2]string{fontUnicode, ""}
	return face{bold: u, regular: u, mono: u, tr: func(s string) string { return s }}
}

// cp1252 reports whether Windows-1252 (the core fonts' encoding) holds
// every character of texts.
func cp1252(texts ...string) bool {
	for _, t := range texts {
		for _, r := range t {
			if _, ok := charmap.Windows1252.EncodeRune(r); !ok {
				return false
			}
		}
	}
	return true
}

// renderPDF lays rec out for a dispute analyst: what was sent, to whom
// (masked), when and by which provider, its delivery confirmation, the
// window and legal lead it satisfied, the notice's text and the digest.
func renderPDF(rec Record) ([]byte, error) {
	pdf := fpdf.New("P", "mm", "A4", "")
	title := fmt.Sprintf("Proof of notice: %s for subscription %s", rec.Kind, rec.SubscriptionID)
	fields, text := pdfFields(rec), strings.TrimSpace(rec.text)
	texts := []string{title, text}
	for _, f := range fields {
		texts = append(texts, f[0], f[1])
	}
	fc := faceFor(pdf, texts...)
	pdf.SetMargins(18, 16, 18)
	pdf.SetAutoPageBreak(true, 16)
	pdf.SetCreationDate(rec.GeneratedAt)
	pdf.SetModificationDate(rec.GeneratedAt)
	pdf.SetTitle("Proof of notice "+rec.KeyPrefix, true)
	pdf.AddPage()
	pdf.SetFont(fc.bold[0], fc.bold[1], 14)
	pdf.MultiCell(0, 7, fc.tr(title), "", "L", false)
	pdf.SetFont(fc.regular[0], fc.regular[1], 8.5)
	pdf.MultiCell(0, 4.6, fc.tr("The message below is the exact message handed to the provider, rebuilt from the notice ledger; its SHA-256 matches the digest the ledger recorded when it was sent."), "", "L", false)
	pdf.Ln(2)
	for _, f := range fields {
		pdf.SetFont(fc.bold[0], fc.bold[1], 8.5)
		pdf.SetTextColor(70, 70, 70)
		pdf.CellFormat(52, 4.6, fc.tr(f[0]), "", 0, "L", false, 0, "")
		pdf.SetFont(fc.regular[0], fc.regular[1], 8.5)
		pdf.SetTextColor(0, 0, 0)
		pdf.MultiCell(0, 4.6, fc.tr(f[1]), "", "L", false)
	}
	pdf.Ln(3)
	pdf.SetFont(fc.bold[0], fc.bold[1], 10.5)
	pdf.CellFormat(0, 6, fc.tr("The notice as the customer received it (text part)"), "B", 1, "L", false, 0, "")
	pdf.Ln(1)
	pdf.SetFont(fc.mono[0], fc.mono[1], 8)
	pdf.MultiCell(0, 4, fc.tr(text), "", "L", false)
	if err := pdf.Error(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := pdf.Output(&b); err != nil {
		return nil, err
	}
	if b.Len() > maxPDF {
		return nil, fmt.Errorf("%d bytes, over the 5 MB a dispute's evidence may have", b.Len())
	}
	return b.Bytes(), nil
}

// pdfFields are the PDF's labelled lines, in reading order.
func pdfFields(rec Record) [][2]string {
	a := rec.Attempts[len(rec.Attempts)-1] // the current attempt
	sent := "-"
	if a.SentAt != nil {
		sent = stamp(*a.SentAt)
	}
	delivered := "no delivery confirmation received (" + orDash(rec.Delivery) + ")"
	if rec.DeliveredAt != nil {
		delivered = stamp(*rec.DeliveredAt) + " (confirmed by the provider)"
	}
	renews, closes := "-", "-"
	if rec.RenewsAt != nil {
		renews = stamp(*rec.RenewsAt)
	}
	if rec.WindowClosesAt != nil {
		closes = stamp(*rec.WindowClosesAt)
	}
	lead := "no legal lead time configured for " + orDash(rec.Jurisdiction)
	if l := rec.LegalLead; l != nil {
		lead = fmt.Sprintf("%s: between %s and %s before the charge; this notice: %s before (%s)", rec.Jurisdiction, l.Min, l.Max, orDash(rec.LeadBeforeCharge), map[bool]string{true: "satisfied", false: "NOT satisfied"}[l.Satisfied])
	}
	return [][2]string{
		{"Subscription", rec.SubscriptionID},
		{"Notice", fmt.Sprintf("%s, billing period %s, revision %d", rec.Kind, rec.PeriodStart, rec.Revision)},
		{"Channel", rec.Channel},
		{"Sent to", rec.To},
		{"Subject", orDash(rec.Subject)},
		{"Sent (provider accepted)", sent},
		{"Provider's message id", providerLine(a)},
		{"Delivered", delivered},
		{"Charge announced", renews},
		{"Notice window", orDash(rec.Rule) + " (time zone " + orDash(rec.TimeZone) + "), closed " + closes},
		{"Legal lead time", lead},
		{"Message-ID", orDash(rec.MessageID)},
		{"Notice key", rec.Key},
		{"SHA-256 of the message", rec.MessageSHA256 + fmt.Sprintf(" (%d bytes, verified)", rec.MessageBytes)},
		{"Proof made", stamp(rec.GeneratedAt)},
	}
}

func providerLine(a Attempt) string {
	if a.Sender == "" {
		return orDash(a.ProviderID)
	}
	return orDash(a.ProviderID) + " (sent by " + a.Sender + ")"
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
