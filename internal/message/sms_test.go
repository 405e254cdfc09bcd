package message_test

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"scan/internal/message"
	"scan/internal/notice"
)

func TestRenderSMS(t *testing.T) {
	t.Parallel()
	r := newRenderer(t)
	n := notice.Notice{Key: strings.Repeat("a", 64), RenewsAt: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC),
		Amount: "12.99", Currency: "EUR", CancelToken: "tok1", Plan: "Pro", Locale: "en"}
	n.Kind = "renewal_notice_t72" // a field of the embedded notice.Tuple; the notice helper hides the package
	body, err := r.RenderSMS(n)
	if err != nil {
		t.Fatal(err)
	}
	want := "Pro: your subscription renews on December 3, 2026 for €12.99. To cancel before then: https://example.com/cancel?token=tok1"
	if body != want {
		t.Fatalf("en body\n%q\nwant\n%q", body, want)
	}
	if enc, segs := message.SMSSegments(body); enc != message.GSM7 || segs != 1 {
		t.Fatalf("en: %s %d", enc, segs)
	}
	n.Locale, n.Plan = "de-AT", ""
	body, err = r.RenderSMS(n)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(body, "Ihr Abo verlängert sich am 3. Dezember 2026 für € 12,99. Vorher kündigen: https://example.com/cancel?token=tok1") {
		t.Fatalf("de-AT body %q", body)
	}
	if enc, _ := message.SMSSegments(body); enc != message.GSM7 {
		t.Fatalf("de-AT body is %s", enc)
	}
	if err := r.CheckSMS([]message.SMSSample{{Kind: "renewal_notice_t72", Locale: "en"}, {Kind: "x", Locale: "de"}}, 2); err != nil {
		t.Fatalf("defaults over two segments: %v", err)
	}
}

// A template whose sample is longer than sms_max_segments is refused,
// naming the kind and locale.
func TestCheckSMSRefusesLongTemplates(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Dies ist eine sehr lange Nachricht über Ihr Abonnement. ", 10) + "{{.CancelURL}}"
	r, err := message.NewRenderer(message.RenderConfig{From: "x <n@example.com>", MessageIDDomain: "n.example.com", CancelURL: "https://example.com/c/{token}",
		Templates: fstest.MapFS{"trial_ending.de.sms.tmpl": {Data: []byte(long)}, "trial_ending.en.sms.tmpl": {Data: []byte("{{.Nope}}")}}})
	if err != nil {
		t.Fatal(err)
	}
	err = r.CheckSMS([]message.SMSSample{{Kind: "trial_ending", Locale: "de"}}, 3)
	if err == nil || !strings.Contains(err.Error(), "trial_ending") || !strings.Contains(err.Error(), "segments") {
		t.Fatalf("long template: %v", err)
	}
	if err := r.CheckSMS([]message.SMSSample{{Kind: "trial_ending", Locale: "en"}}, 3); err == nil {
		t.Fatal("a template that does not execute was accepted")
	}
}
