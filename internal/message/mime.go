package message

import (
	"fmt"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// This file assembles a rendered notice into RFC 5322 bytes: header fields
// folded (RFC 5322 2.2.3), a multipart/alternative body (RFC 2046) of a
// text and an HTML part, each quoted-printable (RFC 2045 6.7). It produces
// the bytes mime/multipart and mime/quotedprintable would, appended to one
// buffer sized up front: no writer objects, no random boundary that is
// thrown away, no copy of a body to a []byte, no per-header string.
// mime_test.go checks the equality against those packages.

// header is one header field: its name and its unfolded value.
type header = struct{ name, value string }

// mimeParts are the two bodies of a message, in the order they go.
var mimeParts = [2]string{
	"Content-Transfer-Encoding: quoted-printable\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n",
	"Content-Transfer-Encoding: quoted-printable\r\nContent-Type: text/html; charset=utf-8\r\n\r\n",
}

// buildMIME returns the complete message: headers, each folded, then a
// multipart/alternative body with the given boundary whose parts are text
// and html, quoted-printable. A header value holding CR or LF is
// ErrHeaderInjection; one with a word that cannot fit a 998-octet line is
// ErrHeaderTooLong (each error names the header).
func buildMIME(headers []header, boundary, text, html string) ([]byte, error) {
	raw := make([]byte, 0, mimeSize(headers, boundary, text, html))
	var err error
	for _, h := range headers {
		// Defence in depth: every value was checked before, check again
		// after encoding.
		if strings.IndexByte(h.value, '\r') >= 0 || strings.IndexByte(h.value, '\n') >= 0 { // address.HasCRLF, without its byte set per call
			return nil, fmt.Errorf("render: %s: %w", h.name, ErrHeaderInjection)
		}
		if raw, err = appendHeader(raw, h.name, h.value); err != nil {
			return nil, fmt.Errorf("render: %s: %w", h.name, err)
		}
	}
	var ct [96]byte // the value, on the stack for the usual boundary
	v := append(append(append(ct[:0], `multipart/alternative; boundary="`...), boundary...), '"')
	raw, _ = appendHeader(raw, "Content-Type", unsafe.String(unsafe.SliceData(v), len(v)))
	raw = append(raw, "\r\n--"...)
	raw = append(raw, boundary...)
	raw = append(raw, "\r\n"...)
	raw = append(raw, mimeParts[0]...)
	raw = appendQuotedPrintable(raw, text)
	raw = append(raw, "\r\n--"...)
	raw = append(raw, boundary...)
	raw = append(raw, "\r\n"...)
	raw = append(raw, mimeParts[1]...)
	raw = appendQuotedPrintable(raw, html)
	raw = append(raw, "\r\n--"...)
	raw = append(raw, boundary...)
	raw = append(raw, "--\r\n\r\n"...)
	return raw, nil
}

// mimeSize bounds the length of buildMIME's message, so that it
// allocates once: each header with a fold every 32 octets of its value
// (a fold costs 2, a line holds at least 38), the multipart structure
// around the boundary, and each body's quoted-printable bound.
func mimeSize(headers []header, boundary, text, html string) int {
	size := 320 + 4*len(boundary)
	for _, h := range headers {
		size += len(h.name) + len(h.value) + len(h.value)/32 + 4
	}
	return size + qpMaxLen(text) + qpMaxLen(html)
}

// Header lines: RFC 5322 allows at most 998 octets between CRLFs and
// recommends folding at 78.
const (
	maxHeaderLine = 998
	foldHeaderAt  = 78
)

// appendHeader appends the header line "name: value" and its CRLF, folded
// (RFC 5322 2.2.3): a CRLF goes before a space wherever the line would
// pass 78 octets, so a display name or subject encoded as a run of encoded
// words (each at most 75 characters, RFC 2047) spreads over as many lines
// as it needs. A value that starts with a quoted string (the display name
// net/mail quotes) is not folded inside it. Unfolding restores the value.
// A single word that leaves a line over 998 octets is ErrHeaderTooLong.
func appendHeader(dst []byte, name, value string) ([]byte, error) {
	dst = append(dst, name...)
	dst = append(dst, ':')
	line := len(name) + 1
	first := true
	word := func(w string) error {
		if !first && line+1+len(w) > foldHeaderAt {
			dst = append(dst, '\r', '\n')
			line = 0
		}
		first = false
		dst = append(dst, ' ')
		dst = append(dst, w...)
		line += 1 + len(w)
		if line > maxHeaderLine {
			return ErrHeaderTooLong
		}
		return nil
	}
	rest, more := value, true
	if quoted, after, ok := cutQuotedWord(value); ok {
		if err := word(quoted); err != nil {
			return nil, err
		}
		rest, more = after, len(quoted) < len(value)
	}
	// The words of rest, split at every single space (two spaces make an
	// empty word, as strings.Split does).
	for more {
		w := rest
		if i := strings.IndexByte(rest, ' '); i >= 0 {
			w, rest = rest[:i], rest[i+1:]
		} else {
			more = false
		}
		if err := word(w); err != nil {
			return nil, err
		}
	}
	return append(dst, '\r', '\n'), nil
}

// cutQuotedWord splits off the first word of a value that starts with a
// quoted string: the quoted string and whatever follows it up to the next
// space, and what follows that space ("" if there is none). ok is false
// when value does not start with a complete quoted string.
func cutQuotedWord(value string) (word, rest string, ok bool) {
	if !strings.HasPrefix(value, `"`) {
		return "", "", false
	}
	for i, escaped := 1, false; i < len(value); i++ {
		switch c := value[i]; {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			end := strings.IndexByte(value[i:], ' ')
			if end < 0 {
				return value, "", true
			}
			return value[:i+end], value[i+end+1:], true
		}
	}
	return "", "", false
}

// appendQEncoded appends what mime.QEncoding.Encode("utf-8", s) returns:
// s itself when every octet is printable ASCII, a space or a tab; else s
// as RFC 2047 encoded-words of at most 75 characters, split between
// characters, never inside one (as mime splits them).
func appendQEncoded(dst []byte, s string) []byte {
	if !qNeedsEncoding(s) {
		return append(dst, s...)
	}
	const open, maxContent = "=?utf-8?q?", 75 - len("=?UTF-8?q?") - len("?=")
	dst = append(dst, open...)
	for i, n := 0, 0; i < len(s); {
		size, enc := 1, 1
		if b := s[i]; b < ' ' || b > '~' || b == '=' || b == '?' || b == '_' {
			_, size = utf8.DecodeRuneInString(s[i:])
			enc = 3 * size
		}
		if n+enc > maxContent {
			dst = append(append(dst, "?= "...), open...)
			n = 0
		}
		for _, b := range []byte(s[i : i+size]) {
			switch {
			case b == ' ':
				dst = append(dst, '_')
			case b >= '!' && b <= '~' && b != '=' && b != '?' && b != '_':
				dst = append(dst, b)
			default:
				dst = append(dst, '=', upperhex[b>>4], upperhex[b&0x0f])
			}
		}
		i, n = i+size, n+enc
	}
	return append(dst, "?="...)
}

// qNeedsEncoding reports whether mime's word encoder encodes s: it holds
// an octet that is not printable ASCII, a space or a tab.
func qNeedsEncoding(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < ' ' || b > '~') && b != '\t' {
			return true
		}
	}
	return false
}

const upperhex = "0123456789ABCDEF"

// qpLineMax is the longest a quoted-printable line may be, its soft line
// break included (RFC 2045 6.7 (5)).
const qpLineMax = 76

// appendQuotedPrintable appends s encoded as mime/quotedprintable's Writer
// (Binary false) encodes it, then closed: CR, LF and CRLF become CRLF; '='
// and every octet outside '!'..'~' other than space and tab become =XX; a
// space or tab before a line break or at the end becomes =20 or =09; a
// soft line break ("=" CRLF) keeps each line within 76 octets. It keeps
// that Writer's one quirk: an encoded octet between CR and LF does not end
// the CR's line break, so the LF is dropped.
func appendQuotedPrintable(dst []byte, s string) []byte {
	start := len(dst) // where the current line begins in dst
	cr := false
	for i := 0; i < len(s); {
		// A run of octets that stand for themselves, copied a line's
		// room at a time.
		j := i + qpLiteralRun(s[i:])
		if j > i {
			cr = false
		}
		for i < j {
			if len(dst)-start == qpLineMax-1 {
				dst = append(dst, '=', '\r', '\n')
				start = len(dst)
			}
			n := min(j-i, qpLineMax-1-(len(dst)-start))
			dst = append(dst, s[i:i+n]...)
			i += n
		}
		if i == len(s) {
			break
		}
		switch b := s[i]; b {
		case '\r', '\n':
			if cr && b == '\n' {
				cr = false
				break
			}
			cr = b == '\r'
			dst, _ = qpEncodeTrailingSpace(dst, start) // the line ends here: where it began no longer matters
			dst = append(dst, '\r', '\n')
			start = len(dst)
		default:
			dst, start = qpEncode(dst, start, b)
		}
		i++
	}
	dst, _ = qpEncodeTrailingSpace(dst, start)
	return dst
}

// qpMaxLen bounds the length of s quoted-printable: every octet that is
// not literal as =XX, CR and LF as four octets (a CRLF and the =20 or =09
// of a space before it), a space at the end as =20, and a soft line break
// (3 octets) at least every 72. A bound, so that buildMIME allocates
// once; mime_test.go checks it.
func qpMaxLen(s string) int {
	n, i := len(s), 0
	for ; i+8 <= len(s); i += 8 {
		if !qpPlain8(load64(s[i:])) {
			for _, c := range []byte(s[i : i+8]) {
				n += int(qpGrowth[c])
			}
		}
	}
	for ; i < len(s); i++ {
		n += int(qpGrowth[s[i]])
	}
	return n + 2 + 3*(n/72+1)
}

// qpLiteralRun returns how many octets at the start of s quoted-printable
// writes as they are (qpLiteral), eight at a time while it can.
func qpLiteralRun(s string) int {
	j := 0
	for j+8 <= len(s) && qpPlain8(load64(s[j:])) {
		j += 8
	}
	for j < len(s) && qpLiteral[s[j]] {
		j++
	}
	return j
}

// qpPlain8 reports whether the eight octets of x (load64) are all
// printable ASCII other than '=' ('!' to '~' but '=', or a space): each
// stands for itself. A tab, also literal, makes it false, as does every
// octet that is not (the callers then look octet by octet). The tests
// are the exact word-at-a-time "has an octet below n" and "has a zero
// octet" (Anderson's bit hacks), on ASCII.
func qpPlain8(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	below := (x - 0x20*lo) &^ x & hi // an octet under ' '
	eq := x ^ 0x3d*lo                // '=' becomes zero
	del := x ^ 0x7f*lo               // DEL becomes zero
	return x&hi|below|(eq-lo)&^eq&hi|(del-lo)&^del&hi == 0
}

// load64 reads the first eight octets of s, little-endian (one load on
// the machines that allow it).
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// qpGrowth is what qpMaxLen adds for an octet: 0 for a literal, 2 for
// =XX, 3 for CR and LF.
var qpGrowth = func() (t [256]uint8) {
	for b := range t {
		if !qpLiteral[b] {
			t[b] = 2
		}
	}
	t['\r'], t['\n'] = 3, 3
	return t
}()

// qpLiteral tells the octets that quoted-printable writes as they are:
// '!' to '~' except '=', and space and tab (encoded only at a line's end).
var qpLiteral = func() (t [256]bool) {
	for b := '!'; b <= '~'; b++ {
		t[b] = b != '='
	}
	t[' '], t['\t'] = true, true
	return t
}()

// qpEncode appends b as =XX, after a soft line break if the line has no
// room for it. It returns dst and where its current line begins.
func qpEncode(dst []byte, start int, b byte) ([]byte, int) {
	if qpLineMax-1-(len(dst)-start) < 3 {
		dst = append(dst, '=', '\r', '\n')
		start = len(dst)
	}
	return append(dst, '=', upperhex[b>>4], upperhex[b&0x0f]), start
}

// qpEncodeTrailingSpace re-encodes the current line's last octet if it is
// a space or a tab, which a line may not end with.
func qpEncodeTrailingSpace(dst []byte, start int) ([]byte, int) {
	if n := len(dst); n > start && (dst[n-1] == ' ' || dst[n-1] == '\t') {
		return qpEncode(dst[:n-1], start, dst[n-1])
	}
	return dst, start
}
