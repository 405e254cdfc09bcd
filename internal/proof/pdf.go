package proof

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/go-pdf/fpdf"
)

// maxPDF is Stripe's limit for a dispute's evidence file.
const maxPDF = 5 << 20

// renderPDF lays rec out for a dispute analyst: what was sent, to whom
// (masked), when and by which provider, its delivery confirmation, the
// window and legal lead it satisfied, the notice's text and the digest.
// Core fonts only (no font file embedded): a few kilobytes. They take
// Latin-1 (cp1252); other characters print as '?'.
func renderPDF(rec Record) ([]byte, error) {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetMargins(18, 16, 18)
	pdf.SetAutoPageBreak(true, 16)
	pdf.SetCreationDate(rec.GeneratedAt)
	pdf.SetModificationDate(rec.GeneratedAt)
	pdf.SetTitle("Proof of notice "+rec.KeyPrefix, true)
	tr := pdf.UnicodeTranslatorFromDescriptor("")
	pdf.AddPage()
	pdf.SetFont("Helvetica", "B", 15)
	pdf.MultiCell(0, 7, tr(fmt.Sprintf("Proof of notice: %s for subscription %s", rec.Kind, rec.SubscriptionID)), "", "L", false)
	pdf.SetFont("Helvetica", "", 9)
	pdf.MultiCell(0, 5, tr("The message below is the exact message handed to the provider, rebuilt from the notice ledger; its SHA-256 matches the digest the ledger recorded when it was sent."), "", "L", false)
	pdf.Ln(2)
	for _, f := range pdfFields(rec) {
		pdf.SetFont("Helvetica", "B", 9)
		pdf.CellFormat(52, 5, tr(f[0]), "", 0, "L", false, 0, "")
		pdf.SetFont("Helvetica", "", 9)
		pdf.MultiCell(0, 5, tr(f[1]), "", "L", false)
	}
	pdf.Ln(3)
	pdf.SetFont("Helvetica", "B", 11)
	pdf.CellFormat(0, 6, tr("The notice as the customer received it (text part)"), "B", 1, "L", false, 0, "")
	pdf.Ln(1)
	pdf.SetFont("Courier", "", 8.5)
	pdf.MultiCell(0, 4, tr(strings.TrimSpace(rec.text)), "", "L", false)
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
	a := rec.Attempts[0]
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
