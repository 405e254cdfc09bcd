package send_test

import (
	"strings"
	"testing"

	"scan/internal/send"
)

func TestSegments(t *testing.T) {
	for _, c := range []struct {
		name, body string
		enc        string
		n          int
	}{
		{"empty", "", send.GSM7, 1},
		{"160 GSM", strings.Repeat("a", 160), send.GSM7, 1},
		{"161 GSM", strings.Repeat("a", 161), send.GSM7, 2},
		{"306 GSM", strings.Repeat("a", 306), send.GSM7, 2},
		{"307 GSM", strings.Repeat("a", 307), send.GSM7, 3},
		{"German umlauts are GSM", "Ihr Abo verlängert sich am 3. Dezember für 12,99 €. Kündigen: https://x.de/c", send.GSM7, 1},
		{"euro counts two", strings.Repeat("€", 80), send.GSM7, 1},
		{"81 euros", strings.Repeat("€", 81), send.GSM7, 2},
		{"extension not split", strings.Repeat("a", 152) + "€" + strings.Repeat("a", 152), send.GSM7, 3}, // 306 septets, but € opens part 2
		{"70 UCS-2", strings.Repeat("ł", 70), send.UCS2, 1},
		{"71 UCS-2", strings.Repeat("ł", 71), send.UCS2, 2},
		{"134 UCS-2", strings.Repeat("ł", 134), send.UCS2, 2},
		{"135 UCS-2", strings.Repeat("ł", 135), send.UCS2, 3},
		{"emoji is a surrogate pair", strings.Repeat("😀", 35), send.UCS2, 1},
		{"emoji not split", strings.Repeat("a", 66) + "😀" + strings.Repeat("a", 66), send.UCS2, 3}, // 134 units, but the pair opens part 2
		{"one non-GSM char makes UCS-2", strings.Repeat("a", 100) + "ç", send.UCS2, 2},
	} {
		enc, n := send.SMSSegments(c.body)
		if enc != c.enc || n != c.n {
			t.Errorf("%s: %s %d, want %s %d", c.name, enc, n, c.enc, c.n)
		}
	}
}
