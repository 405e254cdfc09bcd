package twilio_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"scan/internal/clock"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/provider/twilio"
	"scan/internal/provider/twilio/twiliotest"
	"scan/internal/send"
)

const key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func client(t *testing.T, tw *twiliotest.Server, mod func(*twilio.Config)) *twilio.Client {
	t.Helper()
	cfg := tw.Config()
	cfg.StatusCallback = "https://hooks.example.com/events/twilio"
	cfg.Timeout = 2 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	c, err := twilio.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func msg(to string) *notice.Message {
	return &notice.Message{Notice: notice.Notice{Key: key, To: to, Attempt: 2}, Text: "Your plan renews on 3 December for EUR 12.99. Cancel: https://x.example/c/tok"}
}

func TestSendOutcomes(t *testing.T) {
	t.Parallel()
	tw := twiliotest.New(t)
	c := client(t, tw, nil)
	ctx := context.Background()
	rec, err := c.Send(ctx, msg("+14155550100"))
	if err != nil || !strings.HasPrefix(rec.ProviderID, "SM") {
		t.Fatalf("send: %+v, %v", rec, err)
	}
	r := tw.Requests()[0]
	if r.From != "+15005550006" || r.To != "+14155550100" || r.Body != msg("").Text {
		t.Fatalf("request %+v", r)
	}
	cb, err := url.Parse(r.StatusCallback)
	if err != nil || cb.Host != "hooks.example.com" || cb.Query().Get(twilio.KeyParam) != key || cb.Query().Get(twilio.AttemptParam) != "2" {
		t.Fatalf("status callback %q", r.StatusCallback)
	}
	for _, c2 := range []struct {
		to    string
		class send.Class
		code  int
	}{
		{twiliotest.Invalid, send.Permanent, 21211},
		{twiliotest.Unsubscribed, send.Permanent, 21610},
		{twiliotest.NotMobile, send.Permanent, 21614},
		{twiliotest.NoPermission, send.Permanent, 21408},
		{twiliotest.TooMany, send.Transient, 20429},
	} {
		_, err := c.Send(ctx, msg(c2.to))
		if send.Classify(err) != c2.class || twilio.Code(err) != c2.code {
			t.Errorf("%s: %v (class %v, code %d)", c2.to, err, send.Classify(err), twilio.Code(err))
		}
	}
}

func TestSendWithMessagingService(t *testing.T) {
	t.Parallel()
	tw := twiliotest.New(t)
	c := client(t, tw, func(c *twilio.Config) {
		c.From, c.MessagingServiceSID, c.StatusCallback = "", "MG"+strings.Repeat("1", 32), ""
	})
	if _, err := c.Send(context.Background(), msg("+14155550100")); err != nil {
		t.Fatal(err)
	}
	if r := tw.Requests()[0]; r.MessagingServiceSid == "" || r.From != "" || r.StatusCallback != "" {
		t.Fatalf("request %+v", r)
	}
}

// A request Twilio never answers is Unknown (quarantine), never a retry;
// one that could not connect is a retry; wrong credentials stop the pass.
func TestSendLostAnswerAndRefusals(t *testing.T) {
	t.Parallel()
	tw := twiliotest.New(t)
	c := client(t, tw, func(c *twilio.Config) { c.Timeout = 200 * time.Millisecond })
	_, err := c.Send(context.Background(), msg(twiliotest.NeverAnswered))
	if send.Classify(err) != send.Unknown {
		t.Fatalf("lost answer: %v", err)
	}
	bad := client(t, tw, func(c *twilio.Config) { c.AuthToken = "wrong" })
	if _, err := bad.Send(context.Background(), msg("+14155550100")); send.Classify(err) != send.Transient || !errors.Is(err, send.ErrMisconfigured) {
		t.Fatalf("wrong token: %v", err)
	}
	down := client(t, tw, func(c *twilio.Config) { c.BaseURL = "http://127.0.0.1:1" })
	if _, err := down.Send(context.Background(), msg("+14155550100")); send.Classify(err) != send.Transient || !errors.Is(err, send.ErrUnreachable) {
		t.Fatalf("refused connection: %v", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []twilio.Config{
		{AuthToken: "t", From: "+1"},
		{AccountSID: "AC1", From: "+1"},
		{AccountSID: "AC1", AuthToken: "t"},
		{AccountSID: "AC1", AuthToken: "t", From: "+1", BaseURL: "ftp://x"},
		{AccountSID: "AC1", AuthToken: "t", From: "+1", StatusCallback: "nope"},
	} {
		var ce *twilio.ConfigError
		if _, err := twilio.New(c); !errors.As(err, &ce) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// Status callbacks as the stand-in signs them: verified with the token,
// decoded into settlements of the key and attempt the URL carries.
func TestDecodeCallback(t *testing.T) {
	t.Parallel()
	tw := twiliotest.New(t)
	c := client(t, tw, nil)
	if _, err := c.Send(context.Background(), msg("+14155550100")); err != nil {
		t.Fatal(err)
	}
	req := tw.Requests()[0]
	for _, c2 := range []struct {
		status string
		code   int
		to     ledger.State
		kind   ledger.EventKind
	}{
		{"sent", 0, ledger.Sent, ledger.KindAccepted},
		{"delivered", 0, ledger.Sent, ledger.KindDelivered},
		{"undelivered", 30005, ledger.Failed, ledger.KindBounceHard},
		{"undelivered", 30003, ledger.Failed, ledger.KindBounceSoft},
		{"undelivered", 21610, ledger.Failed, ledger.KindNotSent},
		{"failed", 30001, ledger.Retry, ledger.KindNotSent},
	} {
		u, form, sig := tw.Callback(req, c2.status, c2.code)
		if !twilio.VerifySignature(tw.AuthToken, u, form, sig) {
			t.Fatalf("%s: signature does not verify", c2.status)
		}
		pu, _ := url.Parse(u)
		s, ok, err := twilio.DecodeCallback(pu.Query(), form)
		if err != nil || !ok || s.Key != key || s.Attempt != 2 || s.ProviderID != req.SID || s.To != c2.to || s.Kind != c2.kind {
			t.Errorf("%s %d: %+v, %v, %v", c2.status, c2.code, s, ok, err)
		}
		if strings.Contains(s.Detail+s.Event, "+1") {
			t.Errorf("a number in the settlement: %+v", s)
		}
	}
	if _, _, err := twilio.DecodeCallback(url.Values{}, url.Values{"MessageStatus": {"delivered"}}); !errors.Is(err, twilio.ErrNotNotice) {
		t.Fatalf("no key: %v", err)
	}
	if _, ok, _ := twilio.DecodeCallback(url.Values{twilio.KeyParam: {key}}, url.Values{"MessageStatus": {"receiving"}}); ok {
		t.Fatal("an unknown status applied")
	}
}

// fixedClock is a clock.Clock stopped at one instant.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                     { return c.t }
func (c fixedClock) NewTimer(time.Duration) clock.Timer { panic("not used") }

// Each request asks Twilio to give up on the text when the notice stops
// being of use (ValidityPeriod, in whole seconds, at most Twilio's 36,000);
// a notice with less than a second left is not handed over at all.
func TestValidityPeriod(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 20, 55, 0, 0, time.UTC)
	tw := twiliotest.New(t)
	c := client(t, tw, func(cfg *twilio.Config) { cfg.Clock = fixedClock{now} })
	for _, tc := range []struct {
		name      string
		deliverBy time.Time
		want      string // the ValidityPeriod sent; "-" for nothing sent
	}{
		{"no deadline", time.Time{}, ""},
		{"quiet hours at 21:00", now.Add(5 * time.Minute), "300"},
		{"fraction of a second cut", now.Add(90*time.Minute + 700*time.Millisecond), "5400"},
		{"beyond Twilio's bound", now.Add(72 * time.Hour), "36000"},
		{"less than a second left", now.Add(900 * time.Millisecond), "-"},
		{"already past", now.Add(-time.Minute), "-"},
	} {
		before := len(tw.Requests())
		m := msg("+14155550100")
		m.Notice.DeliverBy = tc.deliverBy
		_, err := c.Send(context.Background(), m)
		reqs := tw.Requests()
		if tc.want == "-" {
			if len(reqs) != before || !errors.Is(err, twilio.ErrTooLate) || send.Classify(err) != send.Transient {
				t.Errorf("%s: %d requests, err %v", tc.name, len(reqs)-before, err)
			}
			continue
		}
		if err != nil || len(reqs) != before+1 {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := reqs[len(reqs)-1].ValidityPeriod; got != tc.want {
			t.Errorf("%s: ValidityPeriod %q, want %q", tc.name, got, tc.want)
		}
	}
}
