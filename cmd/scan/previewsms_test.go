package main

import (
	"strings"
	"testing"
)

// `scan preview --subscription` of a kind whose channels include sms
// prints the sms text with its encoding and segment count: for [sms,
// email] before the email, for [sms] instead of it; a row with no phone
// is said on stderr. It writes nothing and sends nothing.
func TestPreviewSMS(t *testing.T) {
	t.Parallel()
	for _, ch := range []string{"[sms, email]", "[sms]", "[email, sms]"} {
		f, tw, env := smsFixtureOf(t, ch, "")
		code, out, errOut := f.runIn(env, "preview", "--subscription", subID(1))
		if code != 0 {
			t.Fatalf("%s: preview: exit %d\n%s", ch, code, errOut)
		}
		for _, want := range []string{"Channel: sms", "Encoding: GSM-7, ", " segment", "\n\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: preview lacks %q:\n%s", ch, want, out)
			}
		}
		if mailed := strings.Contains(out, "Message-ID: <"+f.msgID(subID(1))+">"); mailed != (ch != "[sms]") {
			t.Errorf("%s: the email shown: %v\n%s", ch, mailed, out)
		}
		if _, err := f.db.Exec(`UPDATE subscriptions SET phone = NULL WHERE id = $1`, subID(2)); err != nil {
			t.Fatal(err)
		}
		code, out, errOut = f.runIn(env, "preview", "--subscription", subID(2))
		if code != 0 || strings.Contains(out, "Channel: sms") || !strings.Contains(errOut, "sms: a pass would not text it: no_usable_address") {
			t.Errorf("%s: no phone: exit %d, %q\n%s", ch, code, errOut, out)
		}
		if ch == "[sms]" {
			// An sms-only kind does not care for the row's email.
			if _, err := f.db.Exec(`UPDATE subscriptions SET email = NULL WHERE id = $1`, subID(3)); err != nil {
				t.Fatal(err)
			}
			code, out, errOut = f.runIn(env, "preview", "--subscription", subID(3))
			if code != 0 || !strings.Contains(out, "Encoding: GSM-7") || !strings.Contains(errOut, "due now") {
				t.Errorf("[sms], no email: exit %d, %q\n%s", code, errOut, out)
			}
		}
		if n := f.ledgerCount(); n != 0 || f.smtp.Total() != 0 || len(tw.Requests()) != 0 {
			t.Fatalf("%s: preview wrote %d ledger rows, sent %d mails, %d sms", ch, n, f.smtp.Total(), len(tw.Requests()))
		}
	}
}
