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
// (testdata/providers/*-details.txt, sources in testdata/providers/README.md):
//
//   - SendGrid: sg_message_id is the X-Message-Id of the reply ("queued as
//     <id>") and a suffix from the first dot (".recvd-...", ".filter..."),
//     so the provider id is matched without it; an asynchronous bounce
//     carries neither unique_args nor sg_message_id, only smtp-id, our
//     Message-ID.
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
			"pXBg2anf2TqCy6WXKQFhieQ:sent pXBg2anf2TqCy6WXKQFhieQ:sent p14c5d75ce93.dfd.64b469:sent m4:failed m5:sent", 5, 0, 0, 7},
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
