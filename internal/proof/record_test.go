package proof

import (
	"testing"
	"time"
)

func TestMaskEmail(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"jane.doe@example.com": "j***@example.com",
		"é@example.org":        "é***@example.org",
		"@example.com":         "***",
		"nobody":               "***",
	} {
		if got := MaskEmail(in); got != want {
			t.Errorf("MaskEmail(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDays(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		25*24*time.Hour + 14*time.Hour + 52*time.Minute + 50*time.Second: "25d14h53m",
		59 * time.Second: "0d0h01m",
		-2 * time.Hour:   "-0d2h00m",
	} {
		if got := days(d); got != want {
			t.Errorf("days(%s) = %q, want %q", d, got, want)
		}
	}
}

// The PDF's text comes from the text/plain part, quoted-printable decoded;
// the recipient is masked.
func TestReadEmail(t *testing.T) {
	t.Parallel()
	msg := "From: \"Example Box\" <notices@example.com>\r\nTo: \"Jane Doe\" <jane@example.com>\r\nSubject: =?utf-8?q?Ihr_Abo_verl=C3=A4ngert_sich?=\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"b\"\r\n\r\n" +
		"--b\r\nContent-Transfer-Encoding: quoted-printable\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nYou will be charged $12.99 on Decem=\r\nber 4.\r\n" +
		"--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>html</p>\r\n--b--\r\n"
	to, subject, text := readEmail([]byte(msg))
	if to != "j***@example.com" || subject != "Ihr Abo verlängert sich" || text != "You will be charged $12.99 on December 4." {
		t.Fatalf("readEmail = %q, %q, %q", to, subject, text)
	}
}
