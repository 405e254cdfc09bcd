package address_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"scan/internal/address"
)

// FuzzParse checks Parse's invariants: it never panics, every error is one
// of the *address.Error values and never echoes the input, and an accepted
// address is header-safe, lower-case ASCII in its domain and a fixed point.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"alice@example.com",
		"x@GMail.COM",
		"x@bücher.example",
		"a@b@c.com",
		"a@example.com\r\nBcc: b@example.com",
		"@example.com",
		"a..b@example.com",
		"a@[127.0.0.1]",
		"josé@xn--bcher-kva.example",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a, err := address.Parse(raw)
		if err != nil {
			var ae *address.Error
			if !errors.As(err, &ae) || ae.Reason == "" {
				t.Fatalf("Parse(%q) returned untyped error %v", raw, err)
			}
			if len(raw) > 3 && strings.Contains(err.Error(), raw) {
				t.Fatalf("error %q echoes the input", err)
			}
			return
		}
		if address.HasCRLF(a.Email) || !address.ValidHeaderValue(a.Email) || !utf8.ValidString(a.Email) {
			t.Fatalf("Parse(%q).Email = %q is not header-safe", raw, a.Email)
		}
		if len(a.Email) > address.MaxLength {
			t.Fatalf("Parse(%q).Email is %d octets", raw, len(a.Email))
		}
		if strings.Count(a.Email, "@") != 1 || !strings.HasSuffix(a.Email, "@"+a.Domain) {
			t.Fatalf("Parse(%q) = %+v: Email does not end in @Domain", raw, a)
		}
		for i := 0; i < len(a.Domain); i++ {
			if c := a.Domain[i]; c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
				t.Fatalf("Parse(%q).Domain = %q is not lower-case ASCII", raw, a.Domain)
			}
		}
		again, err := address.Parse(a.Email)
		if err != nil || again != a {
			t.Fatalf("Parse(Parse(%q).Email) = %+v, %v; want %+v", raw, again, err, a)
		}
	})
}
