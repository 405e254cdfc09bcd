package receive_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"scan/internal/provider/twilio"
	"scan/internal/receive"
)

// Twilio's status callbacks at /events/twilio: verified by
// X-Twilio-Signature over the public callback URL (with the query the
// pass put in it: the notice's key and attempt) and the sorted form, as
// https://www.twilio.com/docs/usage/webhooks/webhooks-security documents;
// an unsigned callback is 401 and a forged one 403, both changing
// nothing; a verified one settles its claim once and a replay is a
// duplicate; without the token and the public URL the endpoint takes
// nothing.
func TestTwilioStatusCallback(t *testing.T) {
	t.Parallel()
	const token, base = "twilio-auth-token-for-tests", "https://hooks.example.com/events/twilio"
	w := newWorld(t, 2, receive.Config{Endpoints: endpoints(t, "TWILIO_AUTH_TOKEN", token, "SCAN_TWILIO_STATUS_CALLBACK", base)})
	signed, err := url.Parse(twilio.CallbackURL(base, key(1), 1))
	if err != nil {
		t.Fatal(err)
	}
	// The parameters of a delivered message's callback, from
	// https://www.twilio.com/docs/messaging/guides/track-outbound-message-status.
	form := url.Values{"MessageSid": {"SM1342fe1b2c904d1ab04f0fc7a58abca9"}, "MessageStatus": {"delivered"},
		"AccountSid": {"ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}, "ApiVersion": {"2010-04-01"}, "SmsStatus": {"delivered"}}
	post := func(sig string, f url.Values) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, w.url+"/events/twilio?"+signed.RawQuery, strings.NewReader(f.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if sig != "" {
			req.Header.Set(twilio.SignatureHeader, sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	good := twilio.Signature(token, signed.String(), form)
	if code := post("", form); code != http.StatusUnauthorized || w.states() != "cc" {
		t.Fatalf("unsigned: %d, states %s; want 401, cc", code, w.states())
	}
	if code := post(twilio.Signature("another token", signed.String(), form), form); code != http.StatusForbidden || w.states() != "cc" {
		t.Fatalf("wrong token: %d, states %s; want 403, cc", code, w.states())
	}
	altered := url.Values{}
	for k, v := range form {
		altered[k] = v
	}
	altered.Set("MessageStatus", "undelivered")
	if code := post(good, altered); code != http.StatusForbidden || w.states() != "cc" {
		t.Fatalf("altered body: %d, states %s; want 403, cc", code, w.states())
	}
	if code := post(good, form); code != http.StatusOK || w.states() != "sc" || w.evidence() != 1 {
		t.Fatalf("signed: %d, states %s, evidence %d; want 200, sc, 1", code, w.states(), w.evidence())
	}
	if code := post(good, form); code != http.StatusOK || w.states() != "sc" || w.evidence() != 1 {
		t.Fatalf("replay: %d, states %s, evidence %d; want 200, sc, 1", code, w.states(), w.evidence())
	}
	w.counted("twilio", "unverified", 1)
	w.counted("twilio", "refused", 2)
	w.counted("twilio", "ok", 1)
	w.counted("twilio", "duplicate", 1)

	off := newWorld(t, 1, receive.Config{Endpoints: endpoints(t, "TWILIO_AUTH_TOKEN", token)}) // no public URL: nothing to verify against
	req, _ := http.NewRequest(http.MethodPost, off.url+"/events/twilio?"+signed.RawQuery, strings.NewReader(form.Encode()))
	req.Header.Set(twilio.SignatureHeader, good)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || off.states() != "c" {
		t.Fatalf("unconfigured: %d, states %s; want 403, c", resp.StatusCode, off.states())
	}
}
