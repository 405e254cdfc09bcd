package message_test

import (
	"strings"
	"testing"

	"scan/internal/message"
)

func TestSegments(t *testing.T) {
	for _, c := range []struct {
		name, body string
		enc        string
		n          int
	}{
		{"empty", "", message.GSM7, 1},
		{"160 GSM", strings.Repeat("a", 160), message.GSM7, 1},
		{"161 GSM", strings.Repeat("a", 161), message.GSM7, 2},
		{"306 GSM", strings.Repeat("a", 306), message.GSM7, 2},
		{"307 GSM", strings.Repeat("a", 307), message.GSM7, 3},
		{"German umlauts are GSM", "Ihr Abo verlängert sich am 3. Dezember für 12,99 €. Kündigen: https://x.de/c", message.GSM7, 1},
		{"euro counts two", strings.Repeat("€", 80), message.GSM7, 1},
		{"81 euros", strings.Repeat("€", 81), message.GSM7, 2},
		{"extension not split", strings.Repeat("a", 152) + "€" + strings.Repeat("a", 152), message.GSM7, 3}, // 306 septets, but € opens part 2
		{"70 UCS-2", strings.Repeat("ł", 70), message.UCS2, 1},
		{"71 UCS-2", strings.Repeat("ł", 71), message.UCS2, 2},
		{"134 UCS-2", strings.Repeat("ł", 134), message.UCS2, 2},
		{"135 UCS-2", strings.Repeat("ł", 135), message.UCS2, 3},
		{"emoji is a surrogate pair", strings.Repeat("😀", 35), message.UCS2, 1},
		{"emoji not split", strings.Repeat("a", 66) + "😀" + strings.Repeat("a", 66), message.UCS2, 3}, // 134 units, but the pair opens part 2
		{"one non-GSM char makes UCS-2", strings.Repeat("a", 100) + "ç", message.UCS2, 2},
	} {
		enc, n := message.SMSSegments(c.body)
		if enc != c.enc || n != c.n {
			t.Errorf("%s: %s %d, want %s %d", c.name, enc, n, c.enc, c.n)
		}
	}
}
