package scan_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/provider/twilio"
	"scan/internal/provider/twilio/twiliotest"
	"scan/internal/scan"
	"scan/internal/send"
	"scan/internal/send/sendtest"
)

const smsPolicy = `
schedule: "0 2 * * *"
message_id_domain: n.example.com
notices:
  - kind: renewal_notice_t72
    open_before: 72h
    close_before: 24h
    channels: [email, sms]
rate:
  default: {per_second: 10000, burst: 1000}
  global: {per_second: 100000, burst: 10000}
  sms: {per_second: 1000, burst: 100}
concurrency: 8
`

func smsSetup(t *testing.T) (*env, *twiliotest.Server, *twilio.Client) {
	t.Helper()
	e := setup(t)
	pol, err := policy.Parse(strings.NewReader(smsPolicy))
	if err != nil {
		t.Fatal(err)
	}
	e.pol = pol
	tw := twiliotest.New(t)
	cfg := tw.Config()
	cfg.Clock = passNow() // a text's ValidityPeriod counts from the pass's now
	cfg.StatusCallback = "https://hooks.example.com/events/twilio"
	cfg.Timeout = 300 * time.Millisecond
	c, err := twilio.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e, tw, c
}

// passNow is a clock standing at the passes' now, for the Twilio client:
// the deadline of each text (notice.DeliverBy) is counted from it.
func passNow() *sendtest.Clock { return sendtest.NewClock(now) }

func (e *env) setPhone(id, phone string) {
	e.t.Helper()
	if _, err := e.db.Exec(`UPDATE subscriptions SET phone = $2 WHERE id = $1`, id, phone); err != nil {
		e.t.Fatal(err)
	}
}

func smsKeyOf(id string) string {
	k, _ := notice.NewKeyer([]byte(secret))
	return k.ChannelKey(notice.Tuple{SubscriptionID: id, PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Kind: "renewal_notice_t72"}, notice.ChannelSMS)
}

func rowsOf(t *testing.T, db *sqlx.DB, id string) map[string]ledger.Row {
	t.Helper()
	rows, err := ledger.BySubscription(context.Background(), db, id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ledger.Row{}
	for _, r := range rows {
		out[r.Channel] = r
	}
	return out
}

// Rows whose email is suppressed, missing, or hard-bounced by evidence
// each get one SMS over several passes; a row mailed successfully gets
// none; a row with neither a usable email nor a phone is recorded
// unreached on both channels; scan undelivered lists exactly that one.
func TestSMSFallback(t *testing.T) {
	t.Parallel()
	e, tw, c := smsSetup(t)
	e.insert(
		sub{id: "mailed", email: "ok@x.com", renewsIn: 48 * time.Hour},
		sub{id: "suppressed", email: "gone@x.com", renewsIn: 48 * time.Hour},
		sub{id: "noemail", email: "", renewsIn: 48 * time.Hour},
		sub{id: "bounces", email: "bounce@x.com", renewsIn: 48 * time.Hour},
		sub{id: "nobody", email: "not an address", renewsIn: 48 * time.Hour},
	)
	for id, p := range map[string]string{"mailed": "+14155550101", "suppressed": "+14155550102", "noemail": "+1 415 555 0103", "bounces": "+14155550104"} {
		e.setPhone(id, p)
	}
	suppressEmail(t, e, "gone@x.com")
	withSMS := func(cfg *scan.Config) { cfg.SMS = c }
	s := e.mustPass(withSMS)
	if s.SMS != 2 || s.SuppressedAddress != 1 || s.NoUsableAddress != 3 {
		t.Fatalf("first pass %+v", s)
	}
	if tw.To("+14155550102") != 1 || tw.To("+14155550103") != 1 || tw.To("+14155550101") != 0 || tw.To("+14155550104") != 0 {
		t.Fatalf("twilio got %+v", tw.Requests())
	}
	// The mailed address hard-bounces, as a provider's event says.
	settle(t, e.db, ledger.Settlement{Key: keyOf("bounces", 0), To: ledger.Failed, Kind: ledger.KindBounceHard, Event: "bounce/hard", At: now})
	if r := rowsOf(t, e.db, "bounces")["email"]; r.State != ledger.Failed {
		t.Fatalf("bounced email row %+v", r)
	}
	s = e.mustPass(withSMS)
	if s.SMS != 1 || tw.To("+14155550104") != 1 {
		t.Fatalf("second pass %+v, %+v", s, tw.Requests())
	}
	s = e.mustPass(withSMS)
	if s.SMS != 0 || s.Minted != 0 || len(tw.Requests()) != 3 {
		t.Fatalf("third pass %+v, twilio %d", s, len(tw.Requests()))
	}
	for _, id := range []string{"suppressed", "noemail", "bounces"} {
		r := rowsOf(t, e.db, id)["sms"]
		if r.State != ledger.Sent || r.NoticeKey != smsKeyOf(id) || r.ProviderID == nil || !strings.HasPrefix(*r.ProviderID, "SM") || r.Attempts != 1 {
			t.Errorf("%s sms row %+v", id, r)
		}
	}
	if _, ok := rowsOf(t, e.db, "mailed")["sms"]; ok {
		t.Error("the mailed row has an sms row")
	}
	nb := rowsOf(t, e.db, "nobody")
	if nb["email"].State != ledger.Failed || nb["sms"].State != ledger.Failed || *nb["sms"].LastError != ledger.ReasonNoAddress {
		t.Errorf("nobody rows %+v", nb)
	}
	un, err := ledger.Undelivered(context.Background(), e.db, now.Add(-time.Hour), now, 100)
	if err != nil || len(un) != 1 || un[0].SubscriptionID != "nobody" || un[0].Reason != "no_usable_address" || un[0].Channels != "email,sms" {
		t.Fatalf("undelivered %+v, %v", un, err)
	}
	if e.smtp.Total() != 2 {
		t.Fatalf("SMTP got %d, want 2 (mailed, bounces)", e.smtp.Total())
	}
}

// A number that replied STOP (21610) is failed and suppressed; a request
// Twilio never answers stays in quarantine and no later pass sends it
// again; a signed status callback settles it.
func TestSMSRefusedAndLost(t *testing.T) {
	t.Parallel()
	e, tw, c := smsSetup(t)
	e.insert(sub{id: "stop", email: "", renewsIn: 48 * time.Hour}, sub{id: "lost", email: "", renewsIn: 48 * time.Hour})
	e.setPhone("stop", twiliotest.Unsubscribed)
	e.setPhone("lost", twiliotest.NeverAnswered)
	withSMS := func(cfg *scan.Config) { cfg.SMS = c }
	s := e.mustPass(withSMS)
	if s.Failed != 1 || s.Ambiguous != 1 || s.SMS != 2 {
		t.Fatalf("pass %+v", s)
	}
	h, _ := notice.NewAddressHasher([]byte(secret))
	hit, err := ledger.SuppressionMatch(context.Background(), e.db, "sms", [][]byte{h.Digest("sms", twiliotest.Unsubscribed)})
	if err != nil || !hit[0] {
		t.Fatalf("21610 not suppressed: %v, %v", hit, err)
	}
	lost := rowsOf(t, e.db, "lost")["sms"]
	if lost.State != ledger.Claimed || lost.MessageSHA256 == nil {
		t.Fatalf("lost row %+v", lost)
	}
	for range 2 {
		e.mustPass(withSMS)
	}
	if tw.To(twiliotest.NeverAnswered) != 1 || tw.To(twiliotest.Unsubscribed) != 1 {
		t.Fatalf("resent: %+v", tw.Requests())
	}
	// Twilio did take it: its status callback, verified, settles it.
	req := tw.Requests()[1]
	if req.To != twiliotest.NeverAnswered {
		req = tw.Requests()[0]
	}
	req.SID = "SM" + strings.Repeat("7", 32)
	u, form, sig := tw.Callback(req, "delivered", 0)
	if twilio.VerifySignature(tw.AuthToken, u, form, sig+"x") || !twilio.VerifySignature(tw.AuthToken, u, form, sig) {
		t.Fatal("signature check")
	}
	pu, _ := url.Parse(u)
	st, ok, err := twilio.DecodeCallback(pu.Query(), form)
	if err != nil || !ok {
		t.Fatal(err)
	}
	settle(t, e.db, st)
	if r := rowsOf(t, e.db, "lost")["sms"]; r.State != ledger.Sent {
		t.Fatalf("after the callback %+v", r)
	}
}

func settle(t *testing.T, db *sqlx.DB, ss ...ledger.Settlement) {
	t.Helper()
	err := ledger.WithTx(context.Background(), db, func(tx *sqlx.Tx) error {
		_, err := ledger.Settle(context.Background(), tx, "test", now, ss)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A kind due at a local time on a working day (issue 27) goes by sms on
// the same rule as by email: the customer without a usable email is
// texted at 09:00 in their zone on the due day, not at 08:59, and the sms
// row keeps the rule and the zone its deadline used.
func TestSMSFollowsADueRule(t *testing.T) {
	t.Parallel()
	e, tw, c := smsSetup(t)
	pol := mustPolicy(t, strings.Replace(duePolicy(`{working_days_before: 3, at: "09:00", calendar: DE}`),
		"    close_before: 1h\n", "    close_before: 1h\n    channels: [email, sms]\n", 1)+"  sms: {per_second: 1000, burst: 100}\n")
	e.pol = pol
	berlin := zone(t, "Europe/Berlin")
	charge := time.Date(2026, 12, 28, 10, 0, 0, 0, berlin) // due Tuesday 22 December, 09:00
	if _, err := e.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start, time_zone, phone)
		VALUES ('texted', '', $1, $2, 'Europe/Berlin', '+14155550109')`, charge, charge.Format(time.DateOnly)); err != nil {
		t.Fatal(err)
	}
	at := func(t0 time.Time) passOpt { return func(cfg *scan.Config) { cfg.SMS = c; cfg.Now = t0 } }
	e.mustPass(at(time.Date(2026, 12, 22, 8, 59, 0, 0, berlin)))
	if n := len(tw.Requests()); n != 0 {
		t.Fatalf("at 08:59 twilio got %d requests, want none: not yet due", n)
	}
	if rows := rowsOf(t, e.db, "texted"); len(rows) != 0 {
		t.Fatalf("at 08:59 the ledger has %+v, want nothing", rows)
	}
	e.mustPass(at(time.Date(2026, 12, 22, 9, 0, 0, 0, berlin)))
	if n := tw.To("+14155550109"); n != 1 {
		t.Fatalf("at 09:00 twilio got %d requests for the number, want 1", n)
	}
	r := rowsOf(t, e.db, "texted")["sms"]
	if r.State != ledger.Sent || r.Rule == nil || !strings.Contains(*r.Rule, "09:00") || r.TimeZone == nil || *r.TimeZone != "Europe/Berlin" {
		t.Fatalf("sms row %+v (rule %v, zone %v)", r, r.Rule, r.TimeZone)
	}
}

// The stop rules are the email stage's for every channel (issue 34): an
// sms sender whose credentials Twilio refuses, or which cannot reach
// Twilio at all, stops the pass with send.ErrMisconfigured or
// send.ErrUnreachable; every claim it made is recorded (retry), none
// left in quarantine, and the summary's invariant holds.
func TestSMSStopsOnUnusableSender(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg  func(tw *twiliotest.Server) twilio.Config
		want error
	}{
		"credentials refused": {func(tw *twiliotest.Server) twilio.Config {
			cfg := tw.Config()
			cfg.Clock = passNow()
			cfg.AuthToken = "wrong"
			return cfg
		}, send.ErrMisconfigured},
		"unreachable": {func(tw *twiliotest.Server) twilio.Config {
			cfg := tw.Config()
			cfg.Clock = passNow()
			cfg.BaseURL = closedURL(t)
			return cfg
		}, send.ErrUnreachable},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, tw, _ := smsSetup(t)
			c, err := twilio.New(tc.cfg(tw))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"a", "b", "c"} {
				e.insert(sub{id: id, email: "", renewsIn: 48 * time.Hour})
				e.setPhone(id, "+1415555010"+string(id[0]-'a'+'1'))
			}
			s, err := e.pass(context.Background(), func(cfg *scan.Config) { cfg.SMS = c })
			if !errors.Is(err, tc.want) {
				t.Fatalf("pass: %v, want %v", err, tc.want)
			}
			if s.Minted+s.Retried != s.Sent+s.Retry+s.Failed+s.Ambiguous || s.Minted != 3 || s.Retry != 3 || s.Quarantine != 0 {
				t.Fatalf("summary %+v", s)
			}
			for _, id := range []string{"a", "b", "c"} {
				if r := rowsOf(t, e.db, id)["sms"]; r.State != ledger.Retry {
					t.Errorf("%s sms row %+v", id, r)
				}
			}
			if n := len(tw.Requests()); n > 1 {
				t.Errorf("twilio got %d requests after the first was refused", n)
			}
		})
	}
}

// closedURL is an http URL on which nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}
