package main

import (
	"bytes"
	"mime"
	"net/mail"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-playground/locales/de"
)

// The policy's default_locale, default_time_zone and preferences_url reach
// the renderer: rows without a locale of their own read German with the
// date in the default zone, and List-Unsubscribe names the preferences
// link, never the cancel link.
func TestPolicyContentReachesTheRenderer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	// A zone whose date differs from UTC's at f.renews.
	zone := "Pacific/Kiritimati" // UTC+14
	if f.renews.Hour() < 10 {
		zone = "Pacific/Pago_Pago" // UTC-11
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	date := de.New().FmtDateLong(f.renews.In(loc))
	if date == de.New().FmtDateLong(f.renews) {
		t.Fatalf("%s gives UTC's date", zone)
	}
	pol, err := os.ReadFile(f.policy)
	if err != nil {
		t.Fatal(err)
	}
	custom := writePolicy(t, string(pol)+`
cancel_url: "https://example.com/cancel?token={token}"
default_locale: de
default_time_zone: `+zone+`
preferences_url: "https://example.com/reminders?token={token}"
`)
	s, _ := f.passIn([]string{"SCAN_CONFIG=" + custom})
	if s.Sent != 2 {
		t.Fatalf("summary = %+v", s)
	}
	for _, m := range f.smtp.Messages() {
		msg, err := mail.ReadMessage(bytes.NewReader(m.Raw))
		if err != nil {
			t.Fatal(err)
		}
		subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
		if want := "Ihr Abonnement verlängert sich am " + date; subject != want {
			t.Errorf("Subject = %q, want %q", subject, want)
		}
		lu := msg.Header.Get("List-Unsubscribe")
		if !strings.HasPrefix(lu, "<https://example.com/reminders?token=") || strings.Contains(lu, "cancel") {
			t.Errorf("List-Unsubscribe = %q", lu)
		}
		if msg.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
			t.Errorf("List-Unsubscribe-Post = %q", msg.Header.Get("List-Unsubscribe-Post"))
		}
	}

	bad := writePolicy(t, string(pol)+"\ndefault_time_zone: Mars/Olympus_Mons\n")
	if code, _, errOut := f.runIn([]string{"SCAN_CONFIG=" + bad}, "run"); code != 2 || !strings.Contains(errOut, "default_time_zone") {
		t.Fatalf("a bad default_time_zone: exit %d, %q", code, errOut)
	}
}
