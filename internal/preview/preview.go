// Package preview renders notices for people to read before any is sent:
// what a pass would do with a subscription's notice now, the message as
// headers and text, and sample notices written to a directory for review.
// It writes nothing to the ledger and sends nothing.
package preview

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"scan/internal/notice"
	"scan/internal/policy"
)

// Status says what a pass at now would do with p.
func Status(p Preview, now time.Time) string {
	window := ""
	if !p.Opens.IsZero() {
		window = fmt.Sprintf(" (window %s to %s)", p.Opens.UTC().Format(time.RFC3339), p.Closes.UTC().Format(time.RFC3339))
	}
	switch {
	case p.Invalid != "":
		return "a pass would not send it: " + p.Invalid + window
	case p.Ledger != "":
		return fmt.Sprintf("already in the ledger (state %s): a pass would not send it again%s", p.Ledger, window)
	case p.Deferred:
		return "due now, but inside the recipient's quiet hours: a later pass outside them sends it" + window
	case p.Due:
		return "due now: a pass now would send this" + window
	case now.Before(p.Opens):
		return "not due yet" + window
	default:
		return "not due now (inactive, or its window has closed)" + window
	}
}

// HeadersAndText is the message's header block and its text part.
func HeadersAndText(m *notice.Message) []byte {
	raw := m.Raw
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		raw = raw[:i]
	}
	var b bytes.Buffer
	b.Write(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")))
	b.WriteString("\n\n")
	b.WriteString(strings.ReplaceAll(m.Text, "\r\n", "\n"))
	if !strings.HasSuffix(m.Text, "\n") {
		b.WriteString("\n")
	}
	return b.Bytes()
}

// Samples are the sample notices to write: each kind in each locale, in
// one jurisdiction ("" for none), rendered at Now. No kinds is every kind
// of the policy, no locales its default locale.
type Samples struct {
	Kinds, Locales []string
	Jurisdiction   string
	Now            time.Time
}

// Renderer renders a notice into the message a sender would hand over.
type Renderer interface {
	Render(n notice.Notice) (*notice.Message, error)
}

// WriteSamples writes, for each kind and locale of s, the sample notice
// from built-in sample data into dir as <kind>.<locale>[.<J>].eml, .txt
// and .html, and returns the paths of the .eml files it wrote.
func WriteSamples(dir string, pol *policy.Policy, r Renderer, s Samples) ([]string, error) {
	var wrote []string
	s = s.orDefaults(pol)
	for _, k := range s.Kinds {
		for _, l := range s.Locales {
			n, err := SampleNotice(pol, Sample{Kind: k, Locale: l, Jurisdiction: s.Jurisdiction}, s.Now)
			if err != nil {
				return wrote, err
			}
			m, err := r.Render(n)
			if err != nil {
				return wrote, fmt.Errorf("render %s in %s: %w", k, l, err)
			}
			base := k + "." + n.Locale
			if s.Jurisdiction != "" {
				base += "." + s.Jurisdiction
			}
			for ext, body := range map[string][]byte{".eml": m.Raw, ".txt": []byte(m.Text), ".html": []byte(m.HTML)} {
				if err := os.WriteFile(filepath.Join(dir, base+ext), body, 0o644); err != nil {
					return wrote, fmt.Errorf("write sample: %w", err)
				}
			}
			wrote = append(wrote, filepath.Join(dir, base+".eml"))
		}
	}
	return wrote, nil
}
