package reconcile

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxDetail is the longest detail kept with an event's evidence, in bytes
// of valid UTF-8 (longer ones are cut at a character boundary and end in
// "…").
const MaxDetail = 300

// redactedLocal replaces the local part of every e-mail address in a
// detail: the domain stays (as in logs), the person does not.
const redactedLocal = "[redacted]"

// address matches an e-mail address as receiving servers quote it in a
// bounce or a response: an optional display name (in quotes, or up to
// three capitalised words), an optional "<" (group 1, kept), a local part
// (quoted, or any run of characters that cannot end a path), "@" (or
// "%40", URL-encoded) and a domain (group 2: letters of any script,
// digits, hyphens and dots, or a literal in brackets; may be empty).
var address = regexp.MustCompile(`(?:"[^"]*"\s*|(?:\p{Lu}[\p{Ll}'-]+\s+){1,3})?(<?)(?:"[^"]*"|[^\s<>()\[\]{}",;:@]+)(?:@|%40)((?:[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*)|\[[^\]]*\])?`)

// detail joins the labelled parts of what a provider said about an event
// into the one line kept as evidence ("label: value; label: value", empty
// values left out), made safe to store and print (cleanDetail).
func detail(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		v := strings.TrimSpace(pairs[i+1])
		if v == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		if pairs[i] != "" {
			b.WriteString(pairs[i])
			b.WriteString(": ")
		}
		b.WriteString(v)
		if b.Len() > 4*MaxDetail {
			break // the rest would be cut anyway
		}
	}
	return cleanDetail(b.String())
}

// cleanDetail makes a provider's text fit to keep and to print: invalid
// UTF-8 dropped, control and format characters (CR, LF, tabs, bidi
// overrides, ...) turned into spaces and runs of spaces into one, every e-mail address reduced to its
// domain ("[redacted]@example.com"; a display name before it goes too), and the result cut to MaxDetail bytes. Bounce diagnostics and
// delivery responses often quote the recipient ("550 5.1.1
// <jane@example.com>: user unknown"); nothing of the person is kept.
func cleanDetail(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }), " ")
	if strings.Contains(s, "@") || strings.Contains(s, "%40") {
		s = address.ReplaceAllString(s, "${1}"+redactedLocal+"@${2}")
	}
	if len(s) <= MaxDetail {
		return s
	}
	const ellipsis = "…"
	cut := MaxDetail - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + ellipsis
}
