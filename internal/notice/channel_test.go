package notice_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"scan/internal/notice"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

// The sms key is the HMAC of the email key's material + "|sms", as the
// contract states; the email key is unchanged.
func TestChannelKey(t *testing.T) {
	k, err := notice.NewKeyer(secret)
	if err != nil {
		t.Fatal(err)
	}
	tu := notice.Tuple{SubscriptionID: "sub_1", PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Kind: "renewal_notice_t72"}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("sub_1|2026-12-01|renewal_notice_t72|0|sms"))
	want := hex.EncodeToString(m.Sum(nil))
	if got := k.ChannelKey(tu, notice.ChannelSMS); got != want {
		t.Fatalf("sms key %s, want %s", got, want)
	}
	if k.ChannelKey(tu, notice.ChannelEmail) != k.Key(tu) || k.ChannelKey(tu, "") != k.Key(tu) {
		t.Fatal("the email key changed")
	}
}

func TestAddressHasher(t *testing.T) {
	h, err := notice.NewAddressHasher(secret)
	if err != nil {
		t.Fatal(err)
	}
	a := h.Digest("email", "ann@example.com")
	if len(a) != 32 {
		t.Fatalf("len %d", len(a))
	}
	if !bytes.Equal(a, h.Clone().Digest("email", "ann@example.com")) {
		t.Fatal("clone differs")
	}
	if bytes.Equal(a, h.Digest("sms", "ann@example.com")) {
		t.Fatal("channel does not enter the digest")
	}
	// Not the secret itself: a plain HMAC under the secret differs.
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("email|ann@example.com"))
	if bytes.Equal(a, m.Sum(nil)) {
		t.Fatal("digest keyed with the secret itself")
	}
	if _, err := notice.NewAddressHasher([]byte("short")); err == nil {
		t.Fatal("short secret accepted")
	}
}

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{" Ann@Example.COM ", "ann@example.com"}, {"a@b", "a@b"}, {"@b", ""}, {"a@", ""}, {"a@b@c", ""}, {"a b@c", ""},
	} {
		got, err := notice.NormalizeEmail(c.in)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("NormalizeEmail(%q) = %q, %v", c.in, got, err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"+14155550100", "+14155550100"}, {"+1 (415) 555-0100", "+14155550100"}, {"+49.30.1234567", "+49301234567"},
		{"14155550100", ""}, {"+0415", ""}, {"+1", ""}, {"+1234567890123456", ""}, {"+1415x", ""}, {"", ""},
	} {
		got, err := notice.NormalizePhone(c.in)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("NormalizePhone(%q) = %q, %v", c.in, got, err)
		}
	}
}
