package address_test

import (
	"errors"
	"strings"
	"testing"

	"scan/internal/address"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		raw    string
		email  string
		domain string
		err    error
	}{
		{"plain", "alice@example.com", "alice@example.com", "example.com", nil},
		{"domain case folded", "x@GMail.COM", "x@gmail.com", "gmail.com", nil},
		{"local case kept", "Alice.B@Example.com", "Alice.B@example.com", "example.com", nil},
		{"plus tag", "a+tag@example.co.uk", "a+tag@example.co.uk", "example.co.uk", nil},
		{"atext specials", "o'neil!#$%&*=?^_`{|}~-/@example.com", "o'neil!#$%&*=?^_`{|}~-/@example.com", "example.com", nil},
		{"idn domain", "x@bücher.example", "x@xn--bcher-kva.example", "xn--bcher-kva.example", nil},
		{"idn domain upper", "x@BÜCHER.example", "x@xn--bcher-kva.example", "xn--bcher-kva.example", nil},
		{"punycode given", "x@XN--BCHER-KVA.example", "x@xn--bcher-kva.example", "xn--bcher-kva.example", nil},
		{"utf8 local", "josé@example.com", "josé@example.com", "example.com", nil},
		{"fullwidth domain mapped", "x@ｅｘａｍｐｌｅ.com", "x@example.com", "example.com", nil},
		{"max length", strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57) + ".com", "", "", nil},

		{"empty", "", "", "", address.ErrEmpty},
		{"too long", strings.Repeat("a", 250) + "@x.com", "", "", address.ErrTooLong},
		{"crlf", "a@example.com\r\nBcc: b@example.com", "", "", address.ErrCRLF},
		{"lf only", "a@exam\nple.com", "", "", address.ErrCRLF},
		{"cr only", "a\r@example.com", "", "", address.ErrCRLF},
		{"space", "a b@example.com", "", "", address.ErrInvalidChar},
		{"leading space", " a@example.com", "", "", address.ErrInvalidChar},
		{"tab", "a\t@example.com", "", "", address.ErrInvalidChar},
		{"nul", "a\x00@example.com", "", "", address.ErrInvalidChar},
		{"del", "a\x7f@example.com", "", "", address.ErrInvalidChar},
		{"nbsp", "a\u00a0@example.com", "", "", address.ErrInvalidChar},
		{"invalid utf8", "a\xff@example.com", "", "", address.ErrInvalidChar},
		{"no at", "alice.example.com", "", "", address.ErrNoAt},
		{"two at", "a@b@example.com", "", "", address.ErrMultipleAt},
		{"empty local", "@example.com", "", "", address.ErrEmptyLocal},
		{"empty domain", "alice@", "", "", address.ErrEmptyDomain},
		{"leading dot", ".a@example.com", "", "", address.ErrInvalidLocal},
		{"trailing dot", "a.@example.com", "", "", address.ErrInvalidLocal},
		{"double dot", "a..b@example.com", "", "", address.ErrInvalidLocal},
		{"angle", "<a>@example.com", "", "", address.ErrInvalidLocal},
		{"quoted", `"a"@example.com`, "", "", address.ErrInvalidLocal},
		{"display name", "Alice<a@example.com>", "", "", address.ErrInvalidLocal},
		{"local too long", strings.Repeat("a", 65) + "@example.com", "", "", address.ErrInvalidLocal},
		{"single label", "a@localhost", "", "", address.ErrInvalidDomain},
		{"literal", "a@[127.0.0.1]", "", "", address.ErrInvalidDomain},
		{"numeric tld", "a@1.2.3.4", "", "", address.ErrInvalidDomain},
		{"trailing dot domain", "a@example.com.", "", "", address.ErrInvalidDomain},
		{"empty label", "a@example..com", "", "", address.ErrInvalidDomain},
		{"leading hyphen", "a@-example.com", "", "", address.ErrInvalidDomain},
		{"underscore", "a@ex_ample.com", "", "", address.ErrInvalidDomain},
		{"label too long", "a@" + strings.Repeat("b", 64) + ".com", "", "", address.ErrInvalidDomain},
		{"bad punycode", "a@xn--a.com", "", "", address.ErrInvalidDomain},
		{"comma", "a@example,com", "", "", address.ErrInvalidDomain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := address.Parse(tt.raw)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Parse(%q) error = %v, want %v", tt.raw, err, tt.err)
				}
				if strings.Contains(err.Error(), "@") {
					t.Errorf("error %q leaks the address", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q) error = %v", tt.raw, err)
			}
			if tt.email == "" {
				// Already normal: expect the input back.
				tt.email, tt.domain = tt.raw, tt.raw[strings.IndexByte(tt.raw, '@')+1:]
			}
			if got.Email != tt.email || got.Domain != tt.domain {
				t.Errorf("Parse(%q) = %+v, want {%s %s}", tt.raw, got, tt.email, tt.domain)
			}
		})
	}
}

func TestErrorReason(t *testing.T) {
	t.Parallel()
	_, err := address.Parse("no-at-sign")
	var ae *address.Error
	if !errors.As(err, &ae) || ae.Reason != "no_at" {
		t.Fatalf("errors.As(%v) reason = %v", err, ae)
	}
}

func TestHasCRLF(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    string
		crlf bool
		ok   bool
	}{
		{"", false, true},
		{"Renewal on 2 May", false, true},
		{"tab\tok", false, true},
		{"ünïcode", false, true},
		{"a\r\nBcc: x", true, false},
		{"a\nb", true, false},
		{"a\rb", true, false},
		{"nul\x00", false, false},
		{"bad\xff", false, false},
	} {
		if got := address.HasCRLF(tt.s); got != tt.crlf {
			t.Errorf("HasCRLF(%q) = %v", tt.s, got)
		}
		if got := address.ValidHeaderValue(tt.s); got != tt.ok {
			t.Errorf("ValidHeaderValue(%q) = %v", tt.s, got)
		}
	}
}
