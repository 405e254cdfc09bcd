package message

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"testing"
)

// The reference implementations: what Render did before mime.go, with
// mime/multipart and mime/quotedprintable. mime.go must produce the same
// bytes.

func stdlibQuotedPrintable(s string) []byte {
	var b bytes.Buffer
	w := quotedprintable.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.Bytes()
}

func stdlibFoldHeader(name, value string) (string, error) {
	var words []string
	start := 0
	if strings.HasPrefix(value, `"`) {
		for i, escaped := 1, false; i < len(value); i++ {
			if c := value[i]; escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				end := strings.IndexByte(value[i:], ' ')
				if end < 0 {
					end = len(value) - i
				}
				words = append(words, value[:i+end])
				start = min(i+end+1, len(value)+1)
				break
			}
		}
	}
	if start <= len(value) {
		words = append(words, strings.Split(value[start:], " ")...)
	}
	var b strings.Builder
	b.WriteString(name + ":")
	line := len(name) + 1
	for i, w := range words {
		if i > 0 && line+1+len(w) > foldHeaderAt {
			b.WriteString("\r\n")
			line = 0
		}
		b.WriteString(" " + w)
		line += 1 + len(w)
		if line > maxHeaderLine {
			return "", ErrHeaderTooLong
		}
	}
	b.WriteString("\r\n")
	return b.String(), nil
}

func stdlibMIME(headers []header, boundary, text, html string) ([]byte, error) {
	var raw bytes.Buffer
	for _, h := range headers {
		folded, err := stdlibFoldHeader(h.name, h.value)
		if err != nil {
			return nil, err
		}
		raw.WriteString(folded)
	}
	ctype, _ := stdlibFoldHeader("Content-Type", `multipart/alternative; boundary="`+boundary+`"`)
	raw.WriteString(ctype + "\r\n")
	mw := multipart.NewWriter(&raw)
	if err := mw.SetBoundary(boundary); err != nil {
		return nil, err
	}
	for _, part := range []struct{ ctype, body string }{
		{"text/plain; charset=utf-8", text},
		{"text/html; charset=utf-8", html},
	} {
		w, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.ctype},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, err
		}
		qp := quotedprintable.NewWriter(w)
		if _, err := qp.Write([]byte(part.body)); err != nil {
			return nil, err
		}
		if err := qp.Close(); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	raw.WriteString("\r\n")
	return raw.Bytes(), nil
}

// qpCases are bodies at the quoted-printable encoder's edges: line
// lengths around 76, trailing white space before a break and at the end,
// '=' and non-ASCII octets near a soft break, bare CR, bare LF, CRLF, and
// the encoder's CR-then-encoded-octet-then-LF quirk.
var qpCases = []string{
	"", "a", " ", "\t", "=", "\r", "\n", "\r\n", "\n\r", "\r\r\n\n",
	"hello world", "trailing space \r\nnext", "trailing tab\t\nnext", "end with space ",
	"a\r\x80\nb", "a\r=\nb", "\r\xff\xfe\n", "\x00\x01\x7f\x80\xff",
	"Grüße, € 12,99 — 漢字 👩‍👩‍👧",
	`<a href="https://example.com/cancel?token=a+b%26c%3Dd">cancel</a>`,
	strings.Repeat("x", 74), strings.Repeat("x", 75), strings.Repeat("x", 76), strings.Repeat("x", 77),
	strings.Repeat("x", 75) + " ", strings.Repeat("x", 74) + " \n", strings.Repeat("x", 73) + "\t\r\n",
	strings.Repeat("x", 72) + "=", strings.Repeat("x", 73) + "=", strings.Repeat("x", 74) + "é",
	strings.Repeat("x", 72) + " \n", strings.Repeat("y", 300), strings.Repeat("= ", 100),
	strings.Repeat(" ", 200) + "\n", strings.Repeat("é", 100),
}

func TestQuotedPrintableMatchesStdlib(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		t.Helper()
		if got, want := appendQuotedPrintable(nil, s), stdlibQuotedPrintable(s); !bytes.Equal(got, want) {
			t.Errorf("appendQuotedPrintable(%q)\n got %q\nwant %q", s, got, want)
		} else if len(got) > qpMaxLen(s) {
			t.Errorf("appendQuotedPrintable(%q) is %d octets, over qpMaxLen's %d", s, len(got), qpMaxLen(s))
		}
		// Appending after existing bytes: lines are counted from where
		// the body starts.
		prefix := []byte("head\r\n")
		if got, want := appendQuotedPrintable(prefix, s), append([]byte("head\r\n"), stdlibQuotedPrintable(s)...); !bytes.Equal(got, want) {
			t.Errorf("appendQuotedPrintable(prefix, %q) = %q, want %q", s, got, want)
		}
	}
	for _, s := range qpCases {
		check(s)
	}
	// Random bodies over an alphabet dense in the edges.
	alphabet := []byte("ab =\t\r\n\xc3\xa9\x80.")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(400))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		check(string(b))
	}
}

func FuzzQuotedPrintable(f *testing.F) {
	for _, s := range qpCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := appendQuotedPrintable(nil, s), stdlibQuotedPrintable(s); !bytes.Equal(got, want) {
			t.Fatalf("appendQuotedPrintable(%q)\n got %q\nwant %q", s, got, want)
		} else if len(got) > qpMaxLen(s) {
			t.Fatalf("appendQuotedPrintable(%q) is %d octets, over qpMaxLen's %d", s, len(got), qpMaxLen(s))
		}
	})
}

// headerCases are values at the folder's edges: empty, runs of spaces, a
// leading quoted string with escapes, unterminated, followed by nothing, by
// a space, by more words; encoded words; a word too long for any line.
var headerCases = []string{
	"", " ", "  ", "a", "a b", "a  b", "a ", " a", `"`, `""`, `"" `, `"a b"`, `"a b" `, `"a b"  c`,
	`"a \" b" <x@example.org>`, `"a \\" b c`, `"unterminated a b`, `"a"b c d`, `x "a b"`,
	`"Ada Lovelace" <user1@example.org>`,
	"=?utf-8?q?Pr=C3=A4mie_Pro_=E2=80=93_4_March_2026?=",
	strings.Repeat("=?utf-8?q?"+strings.Repeat("=C3=A9", 10)+"?= ", 12),
	`"` + strings.Repeat("x", 200) + `" <a@example.org>`,
	strings.Repeat("word ", 60), strings.Repeat("w", 990), strings.Repeat("w", 1000), "a " + strings.Repeat("w", 997),
}

func TestAppendHeaderMatchesFold(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Subject", "To", "X-Mailgun-Variables"} {
		for _, v := range headerCases {
			got, gotErr := appendHeader([]byte("x"), name, v)
			want, wantErr := stdlibFoldHeader(name, v)
			if !errors.Is(gotErr, wantErr) || (gotErr == nil && string(got) != "x"+want) {
				t.Errorf("appendHeader(%q, %q) = %q, %v\nwant %q, %v", name, v, got, gotErr, "x"+want, wantErr)
			}
		}
	}
}

func FuzzAppendHeader(f *testing.F) {
	for _, v := range headerCases {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, gotErr := appendHeader(nil, "Subject", v)
		want, wantErr := stdlibFoldHeader("Subject", v)
		if !errors.Is(gotErr, wantErr) || (gotErr == nil && string(got) != want) {
			t.Fatalf("appendHeader(%q) = %q, %v\nwant %q, %v", v, got, gotErr, want, wantErr)
		}
	})
}

// testMIMEInput is a notice as Render hands it to buildMIME: the headers
// of a SendGrid message, and the bodies the embedded templates render
// (the text part in German, as a locale's template would be).
func testMIMEInput() (headers []header, boundary, text, html string) {
	const key = "3f2a9c0e7b614d58a1e2f3c4d5b6a7980123456789abcdef0123456789abcdef"
	link := "https://example.com/cancel?token=tok-1"
	headers = []header{
		{"From", `"Example Box" <notices@example.com>`},
		{"To", `"Ada Lovelace" <user1@example.org>`},
		{"Subject", "Your Pro subscription renews on 4 March 2026"},
		{"Date", "Sun, 01 Mar 2026 02:00:00 +0000"},
		{"Message-ID", "<" + key[:32] + "@notices.example.com>"},
		{"MIME-Version", "1.0"},
		{"X-Notice-Key", key},
		{"List-Unsubscribe", "<" + link + ">"},
		{"Auto-Submitted", "auto-generated"},
		{"X-SMTPAPI", `{"unique_args":{"notice_key":"` + key + `"}}`},
	}
	text = "Hallo Ada Lovelace,\n\nIhr Pro-Abonnement verlängert sich automatisch am 4. März 2026; " +
		"die hinterlegte Zahlungsmethode wird dann mit 12,99 € belastet.\n\n" +
		"Wenn Sie nicht verlängern möchten, können Sie vorher hier kündigen:\n\n" + link + "\n\n" +
		"Wenn Sie Ihr Abonnement behalten möchten, müssen Sie nichts tun.\n"
	html = `<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>Your subscription renews on 4 March 2026</title></head>
<body>
<p>Hello Ada Lovelace,</p>
<p>Your <strong>Pro</strong> subscription renews automatically on <strong>4 March 2026</strong>, and the payment method on file will be charged then.</p>
<p>If you do not want to renew, you can cancel before that date: <a href="` + link + `">cancel my subscription</a>.</p>
<p>If the link does not work, copy this address into your browser:<br>` + link + `</p>
<p>If you want to keep your subscription, you need to do nothing.</p>
</body>
</html>
`
	return headers, "=_notice_" + key[:32], text, html
}

func TestBuildMIMEMatchesStdlib(t *testing.T) {
	t.Parallel()
	headers, boundary, text, html := testMIMEInput()
	for _, body := range append([][2]string{{text, html}}, [][2]string{{"", ""}, {qpCases[10], qpCases[18]}}...) {
		got, err := buildMIME(headers, boundary, body[0], body[1])
		if err != nil {
			t.Fatal(err)
		}
		want, err := stdlibMIME(headers, boundary, body[0], body[1])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("buildMIME\n got %q\nwant %q", got, want)
		}
	}
	for _, bad := range []struct {
		value string
		err   error
	}{{"a\r\nBcc: x@example.org", ErrHeaderInjection}, {strings.Repeat("w", 1000), ErrHeaderTooLong}} {
		_, err := buildMIME(append(headers, header{"Subject", bad.value}), boundary, text, html)
		if !errors.Is(err, bad.err) || !strings.Contains(err.Error(), "Subject") {
			t.Errorf("buildMIME with Subject %.20q: %v, want %v naming Subject", bad.value, err, bad.err)
		}
	}
}

// BenchmarkMIME is the MIME assembly of one rendered notice (headers,
// multipart/alternative, quoted-printable); BenchmarkMIMEStdlib the same
// bytes by mime/multipart and mime/quotedprintable, as Render did before.
func BenchmarkMIME(b *testing.B) {
	headers, boundary, text, html := testMIMEInput()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildMIME(headers, boundary, text, html); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMIMEStdlib(b *testing.B) {
	headers, boundary, text, html := testMIMEInput()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := stdlibMIME(headers, boundary, text, html); err != nil {
			b.Fatal(err)
		}
	}
}

// qpPlain8 is true exactly when its eight octets are each literal and not
// a tab, for every octet in every position.
func TestQPPlain8(t *testing.T) {
	t.Parallel()
	plain := func(c byte) bool { return qpLiteral[c] && c != '\t' }
	base := []byte("abcdefgh")
	for pos := range 8 {
		for c := range 256 {
			b := append([]byte(nil), base...)
			b[pos] = byte(c)
			if got := qpPlain8(load64(string(b))); got != plain(byte(c)) {
				t.Fatalf("qpPlain8(%q) = %v", b, got)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		var b [8]byte
		want := true
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				b[i] = byte(0x20 + rng.IntN(0x60))
			}
			want = want && plain(b[i])
		}
		if got := qpPlain8(load64(string(b[:]))); got != want {
			t.Fatalf("qpPlain8(%q) = %v, want %v", b, got, want)
		}
	}
}

// appendQEncoded writes what mime.QEncoding.Encode("utf-8", s) returns,
// and appendAddress what net/mail's Address.String returns, for strings
// dense in what each treats specially: encoded-word splits between
// characters, invalid UTF-8, controls, quotes, specials, dots.
func TestQEncodedAndAddressMatchStdlib(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", " ", "\t", "=", "?", "_", "é", "漢", "👩‍👧", "\xff", "\x01", `"`, `\`, "(", ".", "@", "~", "\x7f"}
	rng := rand.New(rand.NewPCG(9, 10))
	word := func(n int) string {
		var b strings.Builder
		for range rng.IntN(n) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 20000 {
		s := word(60)
		if got, want := string(appendQEncoded(nil, s)), mime.QEncoding.Encode("utf-8", s); got != want {
			t.Fatalf("appendQEncoded(%q)\n got %q\nwant %q", s, got, want)
		}
		addr := word(6) + "@" + word(3)
		if got, want := string(appendAddress([]byte("x"), s, addr)), "x"+(&mail.Address{Name: s, Address: addr}).String(); got != want {
			t.Fatalf("appendAddress(%q, %q)\n got %q\nwant %q", s, addr, got, want)
		}
	}
}
