package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// confirm_within (issue 36) is refused before anything is written (exit
// 2, one line naming the kind and the field): with provider none, and
// with a sender that cannot report delivery (outbox, http, or either in a
// failover list). With a provider and the smtp sender the pass runs.
func TestConfirmWithinRefusedWhenNothingCanConfirm(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	withConfirm := func(provider string) string {
		return strings.Replace(testPolicy, "    close_before: 24h\n", "    close_before: 24h\n    channels: [email, sms]\n    confirm_within: 2h\n", 1) +
			"provider: " + provider + "\n"
	}
	for _, tc := range []struct {
		provider string
		extra    []string
	}{
		{"none", nil},
		{"sendgrid", []string{"SCAN_SENDER=outbox", "SCAN_OUTBOX_DIR=" + t.TempDir()}},
		{"sendgrid", []string{"SCAN_SENDER=http", "SCAN_HTTP_URL=http://127.0.0.1:9/notices"}},
	} {
		f.setPolicy(withConfirm(tc.provider))
		code, out, errOut := f.runIn(tc.extra, "run", "--batch-size", "20")
		if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 ||
			!strings.Contains(errOut, "notices[renewal_notice_t72].confirm_within") || !strings.Contains(errOut, "kind renewal_notice_t72") {
			t.Errorf("provider %s, %v: exit %d, stdout %q, stderr %q", tc.provider, tc.extra, code, out, errOut)
		}
		if n := len(f.rows()); n != 0 || f.smtp.Total() != 0 {
			t.Fatalf("provider %s, %v: %d ledger rows, %d messages after a refusal", tc.provider, tc.extra, n, f.smtp.Total())
		}
	}
	f.setPolicy(withConfirm("sendgrid"))
	if s, _ := f.passIn([]string{"TWILIO_ACCOUNT_SID=AC00000000000000000000000000000000", "TWILIO_AUTH_TOKEN=t", "TWILIO_FROM=+15005550006",
		"TWILIO_API_URL=http://127.0.0.1:9"}); s.Sent != 2 {
		t.Fatalf("with provider sendgrid and the smtp sender: %+v", s)
	}
}

// finalEvents is provider p's final.txt (its documented final failure
// for notice 1, a delivery for notice 2) with this fixture's keys and
// Message-IDs, written to a file for scan reconcile.
func (f *fixture) finalEvents(p string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "provider", p, "testdata", "final.txt"))
	if err != nil {
		f.t.Fatal(err)
	}
	text := fixturePlaceholder.ReplaceAllStringFunc(string(b), func(m string) string {
		sub := fixturePlaceholder.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		if sub[1] == "key" {
			return f.key(subID(n), 0, testSecret)
		}
		return f.msgID(subID(n))
	})
	path := filepath.Join(f.t.TempDir(), p+"-final.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return path
}

// Issue 36 at the command line, per provider: after its documented final
// failure and a delivery, `scan lookup -o json` shows delivery
// undeliverable and delivered (state sent for both: accepted), and one
// still unconfirmed; `scan undelivered` lists the undeliverable one with
// the kind of its evidence as the reason, and no address.
func TestLookupShowsDelivery(t *testing.T) {
	t.Parallel()
	for p, reason := range map[string]string{"ses": "bounce_soft", "sendgrid": "blocked", "mailgun": "bounce_soft", "postmark": "bounce_soft"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 3, "")
			f.withProvider(p)
			if s, _ := f.passIn(nil); s.Sent != 3 {
				t.Fatalf("pass %+v", s)
			}
			f.reconcileFile(p, f.finalEvents(p))
			for i, want := range map[int]string{1: "undeliverable", 2: "delivered", 3: "unconfirmed"} {
				code, out, errOut := f.runIn(nil, "lookup", subID(i), "-o", "json")
				rows := jsonLines[map[string]any](t, out)
				if code != 0 || len(rows) != 1 || rows[0]["delivery"] != want {
					t.Errorf("lookup %s: exit %d, %v, want delivery %s\n%s", subID(i), code, rows, want, errOut)
				} else if i == 1 && rows[0]["state"] != "sent" && rows[0]["state"] != "failed" {
					t.Errorf("lookup %s: state %v", subID(i), rows[0]["state"])
				}
			}
			code, out, errOut := f.runIn(nil, "undelivered", "-o", "json")
			rows := jsonLines[map[string]any](t, out)
			if code != 0 || len(rows) != 1 || rows[0]["subscription_id"] != subID(1) || rows[0]["reason"] != reason || strings.Contains(out, "@") {
				t.Fatalf("undelivered: exit %d\n%s\n%s", code, out, errOut)
			}
		})
	}
}
