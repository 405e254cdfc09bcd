package reconcile

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A detail keeps what the provider said of the message and nothing of
// the person: every address is reduced to its domain (with a display
// name before it, quoted or not), control characters become spaces, and
// the line is cut to MaxDetail bytes of valid UTF-8.
func TestCleanDetail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"250 2.6.0 Message received", "250 2.6.0 Message received"},
		{"smtp; 550 5.1.1 <jane.doe@example.com>: Recipient address rejected: User unknown",
			"smtp; 550 5.1.1 <[redacted]@example.com>: Recipient address rejected: User unknown"},
		{"550 5.1.1 jane+renewals@Mail.Example.co.uk... User unknown", "550 5.1.1 [redacted]@Mail.Example.co.uk... User unknown"},
		{`550 "Jane Doe" <jane@example.com> no such user`, "550 <[redacted]@example.com> no such user"},
		{"550 Jane Doe <jane@example.com> no such user", "550 <[redacted]@example.com> no such user"},
		{`550 "jane doe"@example.com unknown`, "550 [redacted]@example.com unknown"},
		{"RCPT TO:<josé@bücher.example> rejected", "RCPT TO:<[redacted]@bücher.example> rejected"},
		{"to: jane%40example.com status=bounced", "to: [redacted]@example.com status=bounced"},
		// A VERP return path holds the recipient before its "=": all of
		// the local part goes.
		{"from bounces+jane=example.com@sender.example", "from [redacted]@sender.example"},
		{"550 <jane@[192.0.2.1]> unknown", "550 <[redacted]@[192.0.2.1]> unknown"},
		{"user jane@ unknown", "user [redacted]@ unknown"},
		{"550 <jane@[IPv6:2001:db8::1]> unknown", "550 <[redacted]@[IPv6:2001:db8::1]> unknown"},
		{"x@[not a literal jane@example.com]", "[redacted]@[not a literal [redacted]@example.com]"},
		{"a@b.example, c@d.example", "[redacted]@b.example, [redacted]@d.example"},
		{"550 5.1.1 user unknown\r\nX-Injected: jane@example.com\r\n", "550 5.1.1 user unknown X-Injected: [redacted]@example.com"},
		{"tab\there\x00nul\x1bescape\u202ertl", "tab here nul escape rtl"},
		{"bad \xff\xfe utf-8", "bad utf-8"},
		{"   ", ""},
	} {
		if got := cleanDetail(tc.in); got != tc.want {
			t.Errorf("cleanDetail(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("é", MaxDetail) // 2 bytes each
	got := cleanDetail(long)
	if len(got) > MaxDetail || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("long detail: %d bytes, valid %v: %q", len(got), utf8.ValidString(got), got)
	}
	// An address past the cut is not half kept: it is redacted first.
	got = cleanDetail(strings.Repeat("x", MaxDetail-20) + " verylonglocalpartofjane@example.com")
	if strings.Contains(got, "verylong") || len(got) > MaxDetail {
		t.Errorf("address at the cut: %q", got)
	}
}

// detail labels the provider's fields, leaves out empty ones and cleans
// the result.
func TestDetail(t *testing.T) {
	t.Parallel()
	if got := Detail("status", "5.1.1", "reason", "", "diagnostic", " 550 <j@x.example>\n"); got != "status: 5.1.1; diagnostic: 550 <[redacted]@x.example>" {
		t.Errorf("detail = %q", got)
	}
	if got := Detail("a", "", "b", " "); got != "" {
		t.Errorf("empty detail = %q", got)
	}
	huge := Detail("a", strings.Repeat("y", 10*MaxDetail), "b", "z")
	if len(huge) > MaxDetail {
		t.Errorf("detail of %d bytes", len(huge))
	}
}

// Whatever a provider sends, a detail is one line of valid UTF-8 of at
// most MaxDetail bytes, and every "@" in it follows the redaction: no
// local part survives.
func FuzzCleanDetail(f *testing.F) {
	for _, s := range []string{
		"smtp; 550 5.1.1 <jane.doe@example.com>: user unknown", `"Jane" <j@x>`, "a%40b", "@@@", "x@[a@b]",
		"jane@[IPv6:::1]", "\"q\"@x", "é@é", strings.Repeat("a@", 200), "Jane Doe\r\n<jane@x>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := cleanDetail(in)
		if len(out) > MaxDetail || !utf8.ValidString(out) || strings.ContainsAny(out, "\r\n\t\x00") {
			t.Fatalf("cleanDetail(%q) = %q", in, out)
		}
		for i := strings.IndexByte(out, '@'); i >= 0; {
			if !strings.HasSuffix(out[:i], redactedLocal) {
				t.Fatalf("cleanDetail(%q) = %q: a local part before @ at %d", in, out, i)
			}
			j := strings.IndexByte(out[i+1:], '@')
			if j < 0 {
				break
			}
			i += 1 + j
		}
		if strings.Contains(out, "%40") {
			t.Fatalf("cleanDetail(%q) = %q: %%40 kept", in, out)
		}
	})
}
