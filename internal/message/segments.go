package message

import "unicode/utf16"

// The encodings of an SMS body.
const (
	GSM7 = "GSM-7"
	UCS2 = "UCS-2"
)

// gsmBasic is the GSM 03.38 default alphabet (3GPP TS 23.038, 6.2.1):
// one septet each.
const gsmBasic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"

// gsmExtension is the default alphabet's extension table (6.2.1.1): two
// septets each (ESC and the character).
const gsmExtension = "\f^{}\\[~]|€"

var gsmSeptets = func() map[rune]int {
	m := map[rune]int{}
	for _, r := range gsmBasic {
		m[r] = 1
	}
	for _, r := range gsmExtension {
		m[r] = 2
	}
	return m
}()

// SMSSegments says how an SMS body is encoded and into how many messages a
// phone receives it (each billed by Twilio as one): GSM-7 when every
// character is in the GSM 03.38 alphabet or its extension table (those
// count two septets), 160 septets in one message or 153 per part of a
// concatenated one, never splitting an extension character; else UCS-2,
// 70 UTF-16 code units in one or 67 per part, never splitting a
// surrogate pair. An empty body is one segment. Twilio, "What the Heck is
// a Segment?", https://www.twilio.com/blog/what-the-heck-is-a-segment-msg
// and the Messaging "Encoding" docs.
func SMSSegments(body string) (encoding string, segments int) {
	if gsm, ok := gsmUnits(body); ok {
		return GSM7, count(gsm, 160, 153)
	}
	var units []int
	for _, r := range body {
		units = append(units, len(utf16.Encode([]rune{r})))
	}
	return UCS2, count(units, 70, 67)
}

func gsmUnits(body string) ([]int, bool) {
	units := make([]int, 0, len(body))
	for _, r := range body {
		n, ok := gsmSeptets[r]
		if !ok {
			return nil, false
		}
		units = append(units, n)
	}
	return units, true
}

// count packs characters of the given widths into one message of single
// units or parts of part units each, no character split across parts.
func count(widths []int, single, part int) int {
	total := 0
	for _, w := range widths {
		total += w
	}
	if total <= single {
		return 1
	}
	n, used := 1, 0
	for _, w := range widths {
		if used+w > part {
			n++
			used = 0
		}
		used += w
	}
	return n
}
