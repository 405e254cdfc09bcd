package suppress_test

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"scan/internal/notice"
	"scan/internal/suppress"
)

func hasher(t *testing.T) *notice.AddressHasher {
	h, err := notice.NewAddressHasher([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func read(t *testing.T, file, channel string) suppress.Result {
	t.Helper()
	f, err := os.Open("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := suppress.Read(f, channel, "imported", hasher(t))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestReadProviderExports(t *testing.T) {
	h := hasher(t)
	for _, c := range []struct {
		file, channel string
		first         string // normalized address of the first entry
		reason        string
		entries, rows int
		invalid       []int
	}{
		{"sendgrid_bounces.csv", "email", "bounced@example.com", "550 5.1.1 unknown or illegal user", 2, 2, nil},
		{"mailgun_bounces.csv", "email", "alice@example.com", "No such mailbox", 1, 3, []int{3}},
		{"postmark_suppressions.csv", "email", "bad-address@example.com", "HardBounce", 2, 2, nil},
		{"twilio_numbers.csv", "sms", "+14155550100", "21610 STOP", 1, 2, []int{3}},
	} {
		t.Run(c.file, func(t *testing.T) {
			res := read(t, c.file, c.channel)
			if len(res.Entries) != c.entries || res.Rows != c.rows || !slices.Equal(res.Invalid, c.invalid) {
				t.Fatalf("got %d entries, %d rows, invalid %v", len(res.Entries), res.Rows, res.Invalid)
			}
			e := res.Entries[0]
			if !bytes.Equal(e.Digest, h.Digest(c.channel, c.first)) || e.Reason != c.reason || e.Channel != c.channel || e.Source != "import" {
				t.Fatalf("first entry %+v", e)
			}
		})
	}
}

func TestReadWithoutAddressColumn(t *testing.T) {
	_, err := suppress.Read(strings.NewReader("id,reason\n1,x\n"), "email", "x", hasher(t))
	if !errors.Is(err, suppress.ErrNoAddressColumn) {
		t.Fatalf("err %v", err)
	}
	res, err := suppress.Read(strings.NewReader("\ufeffEmail Address\nA@B.C\n"), "email", "dflt", hasher(t))
	if err != nil || len(res.Entries) != 1 || res.Entries[0].Reason != "dflt" {
		t.Fatalf("BOM and spaced header: %+v, %v", res, err)
	}
}
