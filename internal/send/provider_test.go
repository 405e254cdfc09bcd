package send_test

import (
	"bytes"
	"encoding/json"
	"net/mail"
	"net/textproto"
	"strings"
	"testing"

	"scan/internal/message"
	"scan/internal/provider/registry"
	"scan/internal/send"
	"scan/internal/smtptest"
)

// For each provider value, the message read at the SMTP server carries
// the header that provider turns into event data, with the notice key and
// the attempt in the form the provider documents, and no other provider's header.
func TestCorrelationHeadersAtTheServer(t *testing.T) {
	t.Parallel()
	all := []string{"X-SES-MESSAGE-TAGS", "X-SES-CONFIGURATION-SET", "X-SMTPAPI", "X-Mailgun-Variables", "X-PM-Metadata-notice_key", "X-PM-Metadata-notice_attempt"}
	// keyOf reads the key back the way the provider does.
	jsonKey := func(t *testing.T, v string, path ...string) string {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			t.Fatalf("header value %q is not JSON: %v", v, err)
		}
		for _, p := range path[:len(path)-1] {
			m, _ = m[p].(map[string]any)
		}
		s, _ := m[path[len(path)-1]].(string)
		return s
	}
	for _, tc := range []struct {
		provider, configSet string
		want                map[string]func(t *testing.T, v, key string) bool
	}{
		{"none", "", nil},
		{"", "ignored", nil},
		{"ses", "", map[string]func(*testing.T, string, string) bool{
			"X-SES-MESSAGE-TAGS": func(_ *testing.T, v, key string) bool { return v == "notice_key="+key+", notice_attempt=2" },
		}},
		{"ses", "notices-prod_1", map[string]func(*testing.T, string, string) bool{
			"X-SES-MESSAGE-TAGS":      func(_ *testing.T, v, key string) bool { return v == "notice_key="+key+", notice_attempt=2" },
			"X-SES-CONFIGURATION-SET": func(_ *testing.T, v, _ string) bool { return v == "notices-prod_1" },
		}},
		{"sendgrid", "", map[string]func(*testing.T, string, string) bool{
			"X-SMTPAPI": func(t *testing.T, v, key string) bool {
				return jsonKey(t, v, "unique_args", "notice_key") == key && jsonKey(t, v, "unique_args", "notice_attempt") == "2"
			},
		}},
		{"mailgun", "", map[string]func(*testing.T, string, string) bool{
			"X-Mailgun-Variables": func(t *testing.T, v, key string) bool {
				return jsonKey(t, v, "notice_key") == key && jsonKey(t, v, "notice_attempt") == "2"
			},
		}},
		{"postmark", "", map[string]func(*testing.T, string, string) bool{
			"X-PM-Metadata-notice_key":     func(_ *testing.T, v, key string) bool { return v == key },
			"X-PM-Metadata-notice_attempt": func(_ *testing.T, v, _ string) bool { return v == "2" },
		}},
	} {
		t.Run(tc.provider+"/"+tc.configSet, func(t *testing.T) {
			t.Parallel()
			correlation, err := registry.Correlation(tc.provider, tc.configSet)
			if err != nil {
				t.Fatal(err)
			}
			r, err := message.NewRenderer(message.RenderConfig{
				From: "Example Box <notices@example.com>", MessageIDDomain: "notices.example.com",
				Correlation: correlation,
			})
			if err != nil {
				t.Fatal(err)
			}
			srv := smtptest.New(t)
			s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1})
			n := notice(1, "example.org")
			n.Attempt = 2 // the second claim of the notice: the attempt travels beside the key
			if _, err := s.Send(t.Context(), render(t, r, n)); err != nil {
				t.Fatal(err)
			}
			raw := srv.Messages()[0].Raw
			msg, err := mail.ReadMessage(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range all {
				vs := msg.Header[textproto.CanonicalMIMEHeaderKey(name)]
				check, wanted := tc.want[name]
				switch {
				case !wanted && len(vs) > 0:
					t.Errorf("%s: %q, want no such header", name, vs)
				case wanted && len(vs) != 1:
					t.Errorf("%s: %d headers, want 1 (message:\n%s)", name, len(vs), raw)
				case wanted && !check(t, vs[0], n.Key):
					t.Errorf("%s: %q does not carry key %s as the provider reads it", name, vs[0], n.Key)
				case wanted && !bytes.Contains(raw, []byte("\r\n"+name+": ")):
					t.Errorf("%s is not spelled as the provider documents it", name)
				}
			}
			// Each correlation header is one line: no folded or broken
			// header came out of the correlation values (other headers may
			// be folded, per RFC 5322). X-SES-MESSAGE-TAGS, two tags in
			// the documented "name=value, name=value" form, is longer than
			// a line and folds at that ", ": unfolding restores it, as the
			// check above read it.
			head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
			lines := strings.Split(string(head), "\r\n")
			for i, line := range lines {
				if line == "" {
					t.Errorf("empty header line %d", i)
					continue
				}
				for _, name := range all {
					if name == "X-SES-MESSAGE-TAGS" {
						continue
					}
					if strings.HasPrefix(line, name+":") && i+1 < len(lines) && strings.ContainsAny(lines[i+1][:min(1, len(lines[i+1]))], " \t") {
						t.Errorf("%s is folded: %q %q", name, line, lines[i+1])
					}
				}
			}
		})
	}
}

func TestRendererRefusesBadProviderSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ provider, configSet string }{
		{"sparkpost", ""},
		{"SES", ""},
		{"twilio", ""},
		{"ses", "a\r\nX-Evil: 1"},
		{"ses", "a b"},
	} {
		if _, err := registry.Correlation(c.provider, c.configSet); err == nil {
			t.Errorf("registry.Correlation(%q, %q) accepted it", c.provider, c.configSet)
		}
	}
}

// No provider's correlation headers hold a line break, whatever hex key
// they are given.
func TestCorrelationHeadersOneLine(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"ses", "sendgrid", "mailgun", "postmark"} {
		c, err := registry.Correlation(p, "set")
		if err != nil {
			t.Fatal(err)
		}
		hs := c(key("x"), 7)
		if len(hs) == 0 {
			t.Fatalf("%s: no header", p)
		}
		for _, h := range hs {
			if strings.ContainsAny(h[0]+h[1], "\r\n") {
				t.Errorf("%s: %q", p, h)
			}
		}
	}
}

func TestReplyProviderID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Ok 0100018f2c9d5e7a-3b5c7a1e-6f0e-4a6b-9d2f-1c2d3e4f5a6b-000000": "0100018f2c9d5e7a-3b5c7a1e-6f0e-4a6b-9d2f-1c2d3e4f5a6b-000000", // Amazon SES
		"2.0.0 Ok: queued as 4F1B22A0B1":                                  "4F1B22A0B1",                                                   // Postfix
		"Ok: queued as 1Ie4T0ZPSLi3Vi0O2M0ruA":                            "1Ie4T0ZPSLi3Vi0O2M0ruA",
		"OK: queued as <abc.def@relay>":                                   "abc.def@relay",
		"2.0.0 OK id=1rXyz-0001ab-2Q":                                     "1rXyz-0001ab-2Q", // Exim
		"mx.example.com says hi\nOk: queued as ZZ9.":                      "ZZ9",
		"2.0.0 OK: queued":                                                "",
		"Ok":                                                              "",
		"OK: queued":                                                      "",
		"Great success":                                                   "", // Mailgun: no id
		"Ok two words":                                                    "",
		"Ok: queued as \"x y\"":                                           "",
		"Ok: queued as é":                                                 "",
		"":                                                                "",
	} {
		if got := send.ReplyProviderID(in); got != want {
			t.Errorf("ReplyProviderID(%q) = %q, want %q", in, got, want)
		}
	}
}

// The provider's id in a real final reply is the Receipt's ProviderID; a
// reply that names none (Mailgun answers "250 Great success") gives no
// provider id, not its text: the text is no id, and events never name it.
func TestSMTPProviderIDFromReply(t *testing.T) {
	t.Parallel()
	for reply, want := range map[string]string{
		"Ok 010001abc-000000":      "010001abc-000000",
		"Ok: queued as 4F1B22A0B1": "4F1B22A0B1",
		"Great success":            "",
		"2.0.0 OK: queued":         "",
		"":                         "",
	} {
		srv := smtptest.New(t, smtptest.WithReply(func(smtptest.Received) string { return reply }))
		s := newSMTP(t, send.SMTPConfig{URL: srv.URL(), Pool: 1})
		rcpt, err := s.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org")))
		if err != nil {
			t.Fatal(err)
		}
		if rcpt.ProviderID != want {
			t.Errorf("reply %q: ProviderID %q, want %q", reply, rcpt.ProviderID, want)
		}
	}
}
