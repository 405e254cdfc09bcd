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

// A notice's Message-ID is the first 32 characters of its key at the
// domain, as the contract builds it: the form the ledger stores, which a
// header's angle brackets and BareMessageID leave unchanged.
func TestMessageID(t *testing.T) {
	t.Parallel()
	k, err := NewKeyer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	key := k.Key(Tuple{SubscriptionID: "sub_1", Kind: "renewal_notice_t72"})
	id := MessageID(key, "n.example.com")
	if want := key[:32] + "@n.example.com"; id != want {
		t.Fatalf("MessageID = %q, want %q", id, want)
	}
	if got := BareMessageID("<" + id + ">"); got != id {
		t.Fatalf("BareMessageID of the header's form = %q, want %q", got, id)
	}
	if got := MessageID("abc", "n.example.com"); got != "abc@n.example.com" {
		t.Fatalf("a short key: %q", got)
	}
}
