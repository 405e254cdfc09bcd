package notice

import "testing"

// The forms a Message-ID arrives in: as written in a header, as a
// provider's event echoes it (with or without brackets), and with the
// line ending of a raw header line.
func TestBareMessageID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"<abc@n.example.com>":      "abc@n.example.com",
		"abc@n.example.com":        "abc@n.example.com",
		" <abc@n.example.com>\r\n": "abc@n.example.com",
		"\t<abc@n.example.com> ":   "abc@n.example.com",
		"<abc@n.example.com":       "abc@n.example.com",
		"":                         "",
		"<>":                       "",
		"<a b@n.example.com>":      "a b@n.example.com", // inner white space is not ours to judge
	} {
		if got := BareMessageID(in); got != want {
			t.Errorf("BareMessageID(%q) = %q, want %q", in, got, want)
		}
	}
}
