package reconcile

import (
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

// Detail joins the labelled parts of what a provider said about an event
// into the one line kept as evidence ("label: value; label: value", empty
// values left out), made safe to store and print (cleanDetail).
func Detail(pairs ...string) string {
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
// overrides, ...) turned into spaces and runs of spaces into one, every
// e-mail address reduced to its domain ("[redacted]@example.com"; a
// display name before it goes too, see redactAddresses), and the result
// cut to MaxDetail bytes. Bounce diagnostics and delivery responses often
// quote the recipient ("550 5.1.1 <jane@example.com>: user unknown");
// nothing of the person is kept.
func cleanDetail(s string) string {
	s = redactAddresses(oneLine(s))
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

// oneLine returns s without invalid UTF-8, with every run of spaces,
// control and format characters as one space, trimmed.
func oneLine(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			continue // invalid UTF-8 (or U+FFFD itself): dropped
		case unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// redactAddresses replaces the local part of every e-mail address in s
// (and a display name before it) with redactedLocal. An address is found
// by its "@" (or "%40", URL-encoded): its local part is the run before it
// of characters that cannot end a path (or a quoted string), its domain
// the run after it of letters of any script, digits, hyphens and dots (or
// an address literal in brackets). A display name is a quoted string, or up to
// three capitalised words, before the address or its "<".
func redactAddresses(s string) string {
	var b strings.Builder
	last := 0 // s[:last] is written
	for i := 0; i < len(s); {
		at, n := nextAt(s, i)
		if at < 0 {
			break
		}
		start := localStart(s, at, last)
		angle := start > last && s[start-1] == '<'
		keep := start // s[last:keep] is kept
		if name := nameStart(s, start-boolInt(angle), last); name >= 0 {
			keep = name
		}
		end := domainEnd(s, at+n)
		b.WriteString(s[last:keep])
		if angle && keep < start {
			b.WriteByte('<')
		}
		b.WriteString(redactedLocal + "@")
		b.WriteString(s[at+n : end])
		last, i = end, end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// nextAt returns the index of the first "@" or "%40" in s from i, and its
// length; -1 when none.
func nextAt(s string, i int) (at, n int) {
	a := strings.IndexByte(s[i:], '@')
	p := strings.Index(s[i:], "%40")
	switch {
	case a < 0 && p < 0:
		return -1, 0
	case p < 0 || a >= 0 && a < p:
		return i + a, 1
	}
	return i + p, 3
}

// localStart returns where the local part ending at s[at] starts, not
// before min: a quoted string, or the run of characters that cannot end a
// path.
func localStart(s string, at, min int) int {
	if at > min && s[at-1] == '"' {
		if q := strings.LastIndexByte(s[min:at-1], '"'); q >= 0 {
			return min + q
		}
	}
	i := at
	for i > min {
		r, size := utf8.DecodeLastRuneInString(s[min:i])
		if unicode.IsSpace(r) || strings.ContainsRune(`<>()[]{}",;:@`, r) {
			break
		}
		i -= size
	}
	return i
}

// nameStart returns where a display name ending at s[end] (before spaces)
// starts, not before min: a quoted string, or up to three capitalised
// words ("Jane Doe"); -1 when there is none.
func nameStart(s string, end, min int) int {
	i := end
	for i > min && s[i-1] == ' ' {
		i--
	}
	if i > min && s[i-1] == '"' {
		if q := strings.LastIndexByte(s[min:i-1], '"'); q >= 0 {
			return min + q
		}
		return -1
	}
	found := -1
	for words := 0; words < 3 && i > min && (i == end || s[i] == ' '); words++ {
		w := i
		for w > min {
			r, size := utf8.DecodeLastRuneInString(s[min:w])
			if !unicode.IsLower(r) && r != '\'' && r != '-' {
				break
			}
			w -= size
		}
		r, size := utf8.DecodeLastRuneInString(s[min:w])
		if w == i || !unicode.IsUpper(r) || w-size > min && s[w-size-1] != ' ' {
			break
		}
		found = w - size
		for i = found; i > min && s[i-1] == ' '; i-- {
		}
	}
	return found
}

// domainEnd returns where the domain starting at s[i] ends: a literal in
// brackets, or a run of letters, digits, hyphens and dots (without a
// trailing dot).
func domainEnd(s string, i int) int {
	if i < len(s) && s[i] == '[' { // an address literal: [192.0.2.1], [IPv6:2001:db8::1]
		j := i + 1
		for j < len(s) && (s[j] == '.' || s[j] == ':' || s[j] == '-' || s[j] < utf8.RuneSelf && (unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j])))) {
			j++
		}
		if j < len(s) && s[j] == ']' {
			return j + 1
		}
	}
	j := i
	for j < len(s) {
		r, size := utf8.DecodeRuneInString(s[j:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '.' {
			break
		}
		j += size
	}
	for j > i && s[j-1] == '.' {
		j--
	}
	return j
}
