package reconcile_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"scan/internal/ledger"
	"scan/internal/reconcile"
)

var placeholder = regexp.MustCompile(`\{\{(key|msgid):(\d+)\}\}`)

// testKey is subscription i's notice key in these tests.
func testKey(i int) string { return fmt.Sprintf("abcdef%026x", i) + strings.Repeat("e", 32) }

// fixturePath is the file of a provider's fixture: "ses" is its
// events.txt, "sendgrid-details" its details.txt, in the provider's
// package (internal/provider/<name>/testdata, whose README cites the
// pages they were written from).
func fixturePath(name string) string {
	p, kind, _ := strings.Cut(name, "-")
	if kind == "" {
		kind = "events"
	}
	return filepath.Join("..", "provider", p, "testdata", kind+".txt")
}

// fixture returns the provider's fixture with {{key:N}} and {{msgid:N}}
// replaced by key(N) and msgid(N).
func fixture(t *testing.T, name string, key func(int) string, msgid func(int) string) string {
	t.Helper()
	b, err := os.ReadFile(fixturePath(name))
	if err != nil {
		t.Fatal(err)
	}
	return placeholder.ReplaceAllStringFunc(string(b), func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		if sub[1] == "key" {
			return key(n)
		}
		return msgid(n)
	})
}

// Each provider's documented payloads, with every event type of the
// mapping, duplicates, out-of-order events, irrelevant and malformed
// payloads, give the settlements the mapping promises, in order, and the
// problems name the line their payload starts on.
func TestReadFormatFixtures(t *testing.T) {
	t.Parallel()
	msgid := func(i int) string { return testKey(i)[:32] + "@n.example.com" }
	for _, tc := range []struct {
		format string
		// settlements as "N:state" (N from the key, mN from the
		// Message-ID, pID when only a provider id names it)
		want                                   string
		payloads, malformed, irrelevant, lines int
		problemLines                           string
	}{
		{"ses", "1:sent 2:sent 3:failed 4:sent 5:retry 6:sent 7:sent 7:sent 8:sent m9:sent 1:sent 99:sent",
			18, 3, 3, 30, "[27 29 30]"},
		{"sendgrid", "1:sent 1:sent 2:sent 2:sent 3:sent 4:sent 5:failed 6:sent 7:failed 8:sent m9:sent 7:sent 99:sent",
			18, 3, 2, 38, "[35 35 36]"},
		{"mailgun", "1:sent 2:sent 3:sent 3:sent 4:failed 5:sent 6:failed 7:sent 8:retry m9:sent 1:sent 99:sent",
			15, 2, 1, 27, "[25 27]"},
		{"postmark", "1:sent 2:failed 3:sent 4:sent 5:sent 6:sent 7:sent 1:sent 1:failed 99:sent p00000000-0000-0000-0000-0000000000aa:sent 8:sent",
			15, 2, 1, 26, "[24 25]"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			in := fixture(t, tc.format, testKey, msgid)
			var got []string
			st, err := reconcile.ReadFormat(strings.NewReader(in), tc.format, func(s ledger.Settlement) error {
				var who string
				switch {
				case s.Key != "":
					n, _ := strconv.ParseInt(s.Key[6:32], 16, 64)
					who = strconv.FormatInt(n, 10)
				case s.MessageID != "":
					n, _ := strconv.ParseInt(s.MessageID[6:32], 16, 64)
					who = "m" + strconv.FormatInt(n, 10)
				default:
					who = "p" + s.ProviderID
				}
				if !strings.HasPrefix(s.Event, tc.format+":") {
					t.Errorf("event %q", s.Event)
				}
				got = append(got, who+":"+string(s.To))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("settlements\n got %s\nwant %s", g, tc.want)
			}
			var lines []int
			for _, p := range st.Problems {
				lines = append(lines, p.Line)
			}
			if st.Payloads != tc.payloads || st.Malformed != tc.malformed || st.Irrelevant != tc.irrelevant || st.Lines != tc.lines ||
				st.Oversized != 0 || fmt.Sprint(lines) != tc.problemLines {
				t.Errorf("stats %+v, want %d payloads, %d malformed, %d irrelevant, %d lines, problems on %s",
					st, tc.payloads, tc.malformed, tc.irrelevant, tc.lines, tc.problemLines)
			}
			if st.Payloads != st.Malformed+st.Irrelevant+st.Oversized+len(got) {
				t.Errorf("payloads %d != malformed + irrelevant + oversized + settled (%d)", st.Payloads, len(got))
			}
		})
	}
}

// Settlements carry the provider's ids as its events name them, the
// timestamp of the event, and SES tags given as an array or a string.
func TestReadFormatFields(t *testing.T) {
	t.Parallel()
	k := testKey(1)
	read := func(format, in string) []ledger.Settlement {
		t.Helper()
		var got []ledger.Settlement
		if _, err := reconcile.ReadFormat(strings.NewReader(in), format, func(s ledger.Settlement) error {
			got = append(got, s)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	s := read("ses", `{"eventType":"Delivery","mail":{"timestamp":"2016-10-19T23:20:52.240Z","messageId":"0100-abc","commonHeaders":{"messageId":"<x@y>"},"tags":{"notice_key":"`+k+`"}},"delivery":{"timestamp":"2016-10-19T23:21:04.133Z"}}`)
	if len(s) != 1 || s[0].Key != k || s[0].ProviderID != "0100-abc" || s[0].MessageID != "x@y" || s[0].Event != "ses:delivery" ||
		s[0].At.Format("15:04:05.000") != "23:21:04.133" {
		t.Errorf("ses: %+v", s)
	}
	s = read("sendgrid", `[{"event":"delivered","timestamp":1513299569,"smtp-id":"<a@b>","sg_message_id":"W86EgYT6SQKk0lRflfLRsA.filter0003.1.0"}]`)
	if len(s) != 1 || s[0].ProviderID != "W86EgYT6SQKk0lRflfLRsA" || s[0].MessageID != "a@b" || s[0].At.Unix() != 1513299569 {
		t.Errorf("sendgrid: %+v", s)
	}
	s = read("postmark", `{"RecordType":"Delivery","MessageID":"883953f4-6105-42a2-a16a-77a8eac79483","DeliveredAt":"2019-11-05T16:33:54Z","Metadata":{"notice_key":"`+k+`"}}`)
	if len(s) != 1 || s[0].ProviderID != "883953f4-6105-42a2-a16a-77a8eac79483" || s[0].Key != k || s[0].At.Year() != 2019 {
		t.Errorf("postmark: %+v", s)
	}
	s = read("mailgun", `{"event-data":{"event":"delivered","timestamp":1521472262.5,"message":{"headers":{"message-id":"m@g"}},"user-variables":{"notice_key":"`+k+`"}}}`)
	if len(s) != 1 || s[0].Key != k || s[0].MessageID != "m@g" || s[0].At.UnixMilli() != 1521472262500 {
		t.Errorf("mailgun: %+v", s)
	}
	// A key that is not 64 lower-case hex characters is no key of ours.
	s = read("postmark", `{"RecordType":"Open","MessageID":"p1","Metadata":{"notice_key":"`+strings.ToUpper(k)+`"}}`)
	if len(s) != 1 || s[0].Key != "" || s[0].ProviderID != "p1" {
		t.Errorf("postmark upper-case key: %+v", s)
	}
}

// A payload over MaxLine is counted as oversized, and the payload after it
// is read.
func TestReadFormatOversized(t *testing.T) {
	t.Parallel()
	big := `{"RecordType":"Delivery","MessageID":"a","pad":"` + strings.Repeat("x", reconcile.MaxLine) + `"}`
	in := big + "\n" + `{"RecordType":"Delivery","MessageID":"b"}` + "\n"
	var got []string
	st, err := reconcile.ReadFormat(strings.NewReader(in), "postmark", func(s ledger.Settlement) error {
		got = append(got, s.ProviderID)
		return nil
	})
	if err != nil || st.Oversized != 1 || st.Payloads != 2 || fmt.Sprint(got) != "[b]" || st.Problems[0].Line != 1 {
		t.Fatalf("stats %+v, settled %v, %v", st, got, err)
	}
}

func TestReadFormatUnknown(t *testing.T) {
	t.Parallel()
	if _, err := reconcile.ReadFormat(strings.NewReader(""), "sparkpost", nil); err == nil {
		t.Fatal("unknown format accepted")
	}
}

// BenchmarkReadFormatSES reads SNS notifications of SES delivery events,
// one per line, as an hourly reconcile of a large sender would.
func BenchmarkReadFormatSES(b *testing.B) {
	ev := `{"eventType":"Delivery","mail":{"timestamp":"2016-10-19T23:20:52.240Z","messageId":"EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000001","tags":{"ses:configuration-set":["notices"],"notice_key":["` +
		testKey(1) + `"]}},"delivery":{"timestamp":"2016-10-19T23:21:04.133Z","recipients":["recipient@example.com"],"smtpResponse":"250 2.6.0 Message received"}}`
	line, _ := json.Marshal(map[string]string{"Type": "Notification", "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324", "Message": ev})
	in := bytes.Repeat(append(line, '\n'), 10000)
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	for b.Loop() {
		st, err := reconcile.ReadFormat(bytes.NewReader(in), "ses", func(ledger.Settlement) error { return nil })
		if err != nil || st.Payloads != 10000 {
			b.Fatal(st, err)
		}
	}
}

// BenchmarkReadFormatSESBounce reads SES permanent bounces whose
// diagnostic quotes the recipient, the worst case of the evidence detail
// (every address is redacted).
func BenchmarkReadFormatSESBounce(b *testing.B) {
	ev := `{"eventType":"Bounce","bounce":{"bounceType":"Permanent","bounceSubType":"General","bouncedRecipients":[{"emailAddress":"recipient@example.com","action":"failed","status":"5.1.1","diagnosticCode":"smtp; 550 5.1.1 <recipient@example.com>: Recipient address rejected: User unknown in virtual mailbox table"}],"timestamp":"2017-08-05T00:41:02.669Z","feedbackId":"01000157c44f053b-61b59c11-9236-11e6-8f96-7be8aexample-000000","reportingMTA":"dsn; mta.example.com"},"mail":{"timestamp":"2017-08-05T00:40:02.012Z","messageId":"EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000003","tags":{"notice_key":["` +
		testKey(1) + `"]}}}`
	line, _ := json.Marshal(map[string]string{"Type": "Notification", "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324", "Message": ev})
	in := bytes.Repeat(append(line, '\n'), 10000)
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	for b.Loop() {
		st, err := reconcile.ReadFormat(bytes.NewReader(in), "ses", func(ledger.Settlement) error { return nil })
		if err != nil || st.Payloads != 10000 {
			b.Fatal(st, err)
		}
	}
}
