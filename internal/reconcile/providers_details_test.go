package reconcile_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// name says which claim a settlement names, as the fixture tests write
// it: N from the key, mN from the Message-ID, pID when only a provider
// id names it.
func name(s ledger.Settlement) string {
	switch {
	case s.Key != "":
		n, _ := strconv.ParseInt(s.Key[6:32], 16, 64)
		return strconv.FormatInt(n, 10)
	case s.MessageID != "":
		n, _ := strconv.ParseInt(s.MessageID[6:32], 16, 64)
		return "m" + strconv.FormatInt(n, 10)
	}
	return "p" + s.ProviderID
}

// The details of each provider's payloads that its documentation shows
// and that once threw an event away or misread it
// (internal/provider/<name>/testdata/details.txt, sources in the README beside it):
//
//   - SendGrid: sg_message_id is the X-Message-Id of the reply ("queued as
//     <id>") and a suffix from the first dot (".recvd-...", ".filter..."),
//     so the provider id is matched without it; an asynchronous bounce
//     carries neither unique_args nor sg_message_id, only smtp-id, our
//     Message-ID. A dropped message whose reason names a suppression list
//     ("Unsubscribed Address", "Spam Reporting Address", "Invalid") is
//     failed (a resend would be dropped again); one dropped for its
//     content or header ("Spam Content", "Invalid SMTPAPI header") retry.
//   - Mailgun: "user-variables" is [] (or a string) for a message without
//     variables, and the payload still settles by its Message-ID; a
//     failure of severity "internal" (Mailgun never sent it and will not
//     retry) is retry, not sent.
//   - Postmark: a Bounce of Type SMTPApiError (an internal rejection of a
//     suppressed recipient: nothing was sent, and a resend is rejected
//     again) is failed, not sent; Transient and AutoResponder bounces are
//     still sent.
func TestReadFormatPayloadDetails(t *testing.T) {
	t.Parallel()
	msgid := func(i int) string { return testKey(i)[:32] + "@n.example.com" }
	for _, tc := range []struct {
		format, fixture                        string
		want                                   string
		payloads, malformed, irrelevant, lines int
	}{
		{"sendgrid", "sendgrid-details",
			"pXBg2anf2TqCy6WXKQFhieQ:sent pXBg2anf2TqCy6WXKQFhieQ:sent p14c5d75ce93.dfd.64b469:sent m4:failed m5:sent " +
				"m6:failed m7:failed m8:failed m9:retry m10:retry", 10, 0, 0, 12},
		{"mailgun", "mailgun-details", "m1:sent m2:failed m3:sent 4:retry m5:sent m7:sent", 7, 0, 1, 33},
		{"postmark", "postmark-details", "1:failed 2:sent 3:failed 4:sent", 4, 0, 0, 4},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			in := fixture(t, tc.fixture, testKey, msgid)
			var got []string
			st, err := reconcile.ReadFormat(strings.NewReader(in), tc.format, func(s ledger.Settlement) error {
				got = append(got, name(s)+":"+string(s.To))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("settlements\n got %s\nwant %s", g, tc.want)
			}
			if st.Payloads != tc.payloads || st.Malformed != tc.malformed || st.Irrelevant != tc.irrelevant || st.Lines != tc.lines {
				t.Errorf("stats %+v, want %d payloads, %d malformed, %d irrelevant, %d lines", st, tc.payloads, tc.malformed, tc.irrelevant, tc.lines)
			}
			for _, p := range st.Problems {
				t.Errorf("problem on line %d: %s", p.Line, p.Reason)
			}
		})
	}
}

// The SendGrid message id is cut at the first dot of its suffix, also when
// the X-Message-Id itself holds dots (older ids: "14c5d75ce93.dfd.64b469").
func TestSendGridMessageIDSuffix(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"XBg2anf2TqCy6WXKQFhieQ.recvd-5f54b5d587-pczjm-1-67BADEEA-6.0": "XBg2anf2TqCy6WXKQFhieQ",
		"XBg2anf2TqCy6WXKQFhieQ.filter0905p1mdw1-4434-59E0C6FF-3.0":    "XBg2anf2TqCy6WXKQFhieQ",
		"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0":          "14c5d75ce93.dfd.64b469",
		"zT-FDCibS4uwaz08cIX8_Q.sendgrid-new-suffix.0":                 "zT-FDCibS4uwaz08cIX8_Q",
		"W86EgYT6SQKk0lRflfLRsA":                                       "W86EgYT6SQKk0lRflfLRsA",
	} {
		var got []string
		payload := fmt.Sprintf(`{"event":"delivered","timestamp":1513299569,"sg_message_id":%q}`, in)
		if _, err := reconcile.ReadFormat(strings.NewReader(payload), "sendgrid", func(s ledger.Settlement) error {
			got = append(got, s.ProviderID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("sg_message_id %q: provider id %q, want %q", in, got, want)
		}
	}
}

// Each decoder keeps what its provider documents about a delivery, a
// bounce, a complaint or a drop as the settlement's Detail
// (internal/provider/<name>/testdata/events.txt: the documented examples).
func TestReadFormatDetail(t *testing.T) {
	t.Parallel()
	msgid := func(i int) string { return testKey(i)[:32] + "@n.example.com" }
	for _, tc := range []struct {
		fixture string
		want    map[string]string // "name event" -> detail
	}{
		{"ses", map[string]string{
			"1 ses:delivery":         "response: 250 2.6.0 Message received; mta: mta.example.com",
			"3 ses:bounce/permanent": "bounce: Permanent/General; status: 5.1.1; diagnostic: smtp; 550 5.1.1 user unknown; mta: dsn; mta.example.com",
			"4 ses:bounce/transient": "bounce: Transient/MailboxFull",
			"5 ses:reject":           "reason: Bad content",
			"6 ses:complaint":        "feedback: abuse",
			"8 ses:deliverydelay":    "delay: TransientCommunicationFailure; status: 4.4.1; diagnostic: smtp; 421 4.4.1 Unable to connect",
			"2 ses:send":             "",
		}},
		{"sendgrid", map[string]string{
			"1 sendgrid:delivered":     "response: 250 OK",
			"4 sendgrid:deferred":      "response: 400 try again later",
			"5 sendgrid:bounce/bounce": "type: bounce; classification: Invalid Address; status: 5.0.0; reason: 500 unknown recipient",
			"7 sendgrid:dropped":       "status: 5.0.0; reason: Bounced Address",
		}},
		{"mailgun", map[string]string{
			"1 mailgun:delivered":                        "code: 250; message: OK",
			"4 mailgun:failed/permanent":                 "severity: permanent; reason: bounce; code: 550; message: 5.1.1 The email account that you tried to reach does not exist.",
			"6 mailgun:failed/permanent/suppress-bounce": "severity: permanent; reason: suppress-bounce; code: 605; message: Not delivering to previously bounced address",
		}},
		{"mailgun-details", map[string]string{"4 mailgun:failed/internal": "severity: internal; reason: generic"}},
		{"postmark", map[string]string{
			"1 postmark:delivery":          "details: Test delivery webhook details",
			"2 postmark:bounce/hardbounce": "type: HardBounce (1); details: Test bounce details",
			"4 postmark:spamcomplaint":     "type: SpamComplaint (512)",
		}},
		{"postmark-details", map[string]string{"1 postmark:bounce/smtpapierror": "type: SMTPApiError (100007); details: Test bounce details"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			format, _, _ := strings.Cut(tc.fixture, "-")
			got := map[string]string{}
			if _, err := reconcile.ReadFormat(strings.NewReader(fixture(t, tc.fixture, testKey, msgid)), format, func(s ledger.Settlement) error {
				if k := name(s) + " " + s.Event; got[k] == "" {
					got[k] = s.Detail
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if g, ok := got[k]; !ok || g != want {
					t.Errorf("%s: detail %q (read %v), want %q", k, g, ok, want)
				}
			}
		})
	}
}

// An address a receiving server quotes in its response or diagnostic (in
// any of the fields each decoder keeps) never reaches a settlement: only
// its domain does.
func TestReadFormatDetailHasNoAddress(t *testing.T) {
	t.Parallel()
	const who = "jane.doe+bills"
	diag := `550 5.1.1 \"Jane Doe\" <` + who + `@example.com>: Recipient address rejected:\r\nUser unknown`
	for _, tc := range []struct{ format, payload string }{
		{"ses", `{"eventType":"Bounce","bounce":{"bounceType":"Permanent","bounceSubType":"General","bouncedRecipients":[{"emailAddress":"` + who + `@example.com","status":"5.1.1","diagnosticCode":"smtp; ` + diag + `"}]},"mail":{"messageId":"a"}}`},
		{"ses", `{"eventType":"Delivery","delivery":{"smtpResponse":"250 ok ` + who + `@example.com queued"},"mail":{"messageId":"a"}}`},
		{"sendgrid", `{"event":"bounce","type":"bounce","reason":"` + diag + `","status":"5.1.1","sg_message_id":"a","email":"` + who + `@example.com"}`},
		{"sendgrid", `{"event":"delivered","response":"250 OK id=1 rcpt=` + who + `@example.com","sg_message_id":"a"}`},
		{"mailgun", `{"event-data":{"event":"failed","severity":"permanent","reason":"bounce","delivery-status":{"code":550,"message":"` + diag + `","description":"` + who + `@example.com"},"message":{"headers":{"message-id":"m@g"}}}}`},
		{"postmark", `{"RecordType":"Bounce","Type":"HardBounce","TypeCode":1,"Details":"` + diag + `","Email":"` + who + `@example.com","MessageID":"a"}`},
	} {
		var got []string
		if _, err := reconcile.ReadFormat(strings.NewReader(tc.payload), tc.format, func(s ledger.Settlement) error {
			got = append(got, s.Detail)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] == "" || strings.Contains(got[0], "jane") || strings.Contains(got[0], "Jane") ||
			!strings.Contains(got[0], "[redacted]@example.com") || strings.ContainsAny(got[0], "\r\n") {
			t.Errorf("%s %s: detail %q", tc.format, tc.payload, got)
		}
	}
	// Our own JSON lines too.
	var got []string
	if _, err := reconcile.Read(strings.NewReader(`{"message_id":"m@x","event":"bounced","detail":"`+diag+`"}`), func(s ledger.Settlement) error {
		got = append(got, s.Detail)
		return nil
	}); err != nil || len(got) != 1 || strings.Contains(got[0], "jane") || !strings.Contains(got[0], "[redacted]@example.com") {
		t.Errorf("jsonl: detail %q, %v", got, err)
	}
}
