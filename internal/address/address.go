// Package address parses and normalises recipient e-mail addresses.
//
// Parse is deliberately stricter than RFC 5322: it accepts the plain
// addr-spec form ("local@domain") that a subscription row holds, never a
// display name, a comment, a quoted local part or a domain literal, and it
// refuses anything that could break out of a mail header. The domain is
// returned in lower-case ASCII (IDNA) form, so that "x@GMail.COM" and
// "x@gmail.com" share one rate-limit bucket and "x@bücher.example" is sent as
// "x@xn--bcher-kva.example".
//
// Errors never contain the address: each is one of the exported *Error
// values, whose Reason is a short, stable word fit for logs and metrics.
package address

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxLength is the longest address Parse accepts, in octets, both as given
// and after its domain is converted to ASCII (RFC 5321 section 4.5.3.1.3).
const MaxLength = 254

// maxLocal is the longest local part (RFC 5321 section 4.5.3.1.1).
const maxLocal = 64

// Address is a parsed, normalised recipient address.
type Address struct {
	// Email is the address to send to: the local part exactly as given
	// (local parts are case-sensitive) followed by "@" and Domain.
	Email string
	// Domain is the lower-case ASCII form of the domain, e.g.
	// "xn--bcher-kva.example": the key of the recipient's rate-limit bucket.
	Domain string
}

// Error is a reason why Parse refused an address. The values are the
// exported Err* variables; compare with errors.Is. Error never includes the
// address itself.
type Error struct {
	// Reason is a short snake_case word such as "no_at", usable as a log
	// field or metric label.
	Reason string
}

func (e *Error) Error() string { return "address: " + e.Reason }

// The reasons Parse gives. Each is checked in the order listed, so an
// address with several faults reports the first.
var (
	ErrEmpty         = &Error{Reason: "empty"}
	ErrTooLong       = &Error{Reason: "too_long"}       // over MaxLength octets
	ErrCRLF          = &Error{Reason: "crlf"}           // contains CR or LF
	ErrInvalidChar   = &Error{Reason: "invalid_char"}   // space, control character or invalid UTF-8
	ErrNoAt          = &Error{Reason: "no_at"}          // no "@"
	ErrMultipleAt    = &Error{Reason: "multiple_at"}    // more than one "@"
	ErrEmptyLocal    = &Error{Reason: "empty_local"}    // nothing before "@"
	ErrEmptyDomain   = &Error{Reason: "empty_domain"}   // nothing after "@"
	ErrInvalidLocal  = &Error{Reason: "invalid_local"}  // local part not a dot-atom, or over 64 octets
	ErrInvalidDomain = &Error{Reason: "invalid_domain"} // not a valid (internationalised) host name with a dot
)

// profile maps case and width like a lookup (RFC 5891 section 5), applies
// the Bidi rule and checks label and name lengths.
var profile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.VerifyDNSLength(true),
	idna.Transitional(false),
)

// Parse validates raw and returns its normalised form. It accepts only
// "local@domain" where local is a dot-atom (ASCII atext or non-ASCII UTF-8
// letters, no leading, trailing or doubled dot) and domain is a host name
// with at least two labels, possibly internationalised. The returned error,
// if any, is one of the Err* values.
func Parse(raw string) (Address, error) {
	if raw == "" {
		return Address{}, ErrEmpty
	}
	if len(raw) > MaxLength {
		return Address{}, ErrTooLong
	}
	if HasCRLF(raw) {
		return Address{}, ErrCRLF
	}
	if !utf8.ValidString(raw) {
		return Address{}, ErrInvalidChar
	}
	for _, r := range raw {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError {
			return Address{}, ErrInvalidChar
		}
	}
	at := strings.IndexByte(raw, '@')
	if at < 0 {
		return Address{}, ErrNoAt
	}
	if strings.IndexByte(raw[at+1:], '@') >= 0 {
		return Address{}, ErrMultipleAt
	}
	local, domain := raw[:at], raw[at+1:]
	if local == "" {
		return Address{}, ErrEmptyLocal
	}
	if domain == "" {
		return Address{}, ErrEmptyDomain
	}
	if !validLocal(local) {
		return Address{}, ErrInvalidLocal
	}
	ascii, ok := asciiDomain(domain)
	if !ok {
		return Address{}, ErrInvalidDomain
	}
	email := local + "@" + ascii
	if len(email) > MaxLength {
		return Address{}, ErrTooLong
	}
	return Address{Email: email, Domain: ascii}, nil
}

// HasCRLF reports whether s contains a carriage return or a line feed, the
// two bytes that would let a value start a new mail header.
func HasCRLF(s string) bool {
	return strings.ContainsAny(s, "\r\n")
}

// ValidHeaderValue reports whether s can be placed in a mail header as is:
// valid UTF-8 with no CR, LF or other control character.
func ValidHeaderValue(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' {
			return false
		}
	}
	return true
}

// validLocal reports whether local is a dot-atom of at most 64 octets made
// of RFC 5322 atext or non-ASCII characters (RFC 6531).
func validLocal(local string) bool {
	if len(local) > maxLocal {
		return false
	}
	if local[0] == '.' || local[len(local)-1] == '.' || strings.Contains(local, "..") {
		return false
	}
	for _, r := range local {
		if r >= utf8.RuneSelf {
			if !unicode.IsGraphic(r) {
				return false
			}
			continue
		}
		if !isAtext(byte(r)) && r != '.' {
			return false
		}
	}
	return true
}

// isAtext reports whether c is an RFC 5322 atext character.
func isAtext(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0
}

// asciiDomain converts domain to lower-case ASCII and checks it is a host
// name: two or more labels of letters, digits and inner hyphens, each 1 to
// 63 octets, 253 in all, and a top-level label that is not all digits.
func asciiDomain(domain string) (string, bool) {
	if strings.HasPrefix(domain, "[") || strings.HasSuffix(domain, ".") {
		return "", false
	}
	ascii, err := profile.ToASCII(domain)
	if err != nil || ascii == "" || len(ascii) > 253 {
		return "", false
	}
	ascii = strings.ToLower(ascii)
	labels := strings.Split(ascii, ".")
	if len(labels) < 2 {
		return "", false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return "", false
			}
		}
	}
	tld := labels[len(labels)-1]
	if strings.Trim(tld, "0123456789") == "" {
		return "", false
	}
	return ascii, true
}
