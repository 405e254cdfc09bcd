package scan_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/message"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/scan"
	"scan/internal/send"
)

// recorder is the real SMTP sender, wrapped to keep each notice it was
// handed, by subscription id and kind: what the pass filled in.
type recorder struct {
	send.Sender
	mu  sync.Mutex
	got map[string]notice.Notice
}

func (r *recorder) Send(ctx context.Context, m *notice.Message) (send.Receipt, error) {
	r.mu.Lock()
	r.got[m.Notice.SubscriptionID+"/"+m.Notice.Kind] = m.Notice
	r.mu.Unlock()
	return r.Sender.Send(ctx, m)
}

func (r *recorder) notice(id, kind string) (notice.Notice, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.got[id+"/"+kind]
	return n, ok
}

func mustPolicy(t *testing.T, y string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse(strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// contentPass runs one pass at `at` with pol through the test's SMTP
// server and returns its summary, log and the notices sent.
func contentPass(t *testing.T, e *env, pol *policy.Policy, at time.Time) (scan.Summary, string, *recorder) {
	t.Helper()
	smtp, err := send.NewSMTP(send.SMTPConfig{URL: e.smtp.URL(), Pool: 2, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer smtp.Close()
	rec := &recorder{Sender: smtp, got: map[string]notice.Notice{}}
	r, err := message.NewRenderer(message.RenderConfig{From: pol.From, MessageIDDomain: pol.MessageIDDomain, CancelURL: pol.CancelURL})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	sc, err := newPass(context.Background(), e.db, rec, r, zerolog.New(&logs), scan.Config{
		Policy: pol, Secret: []byte(secret), RunID: fmt.Sprintf("run-%d", time.Now().UnixNano()), Now: at,
		BatchSize: 3, Retry: send.RetryPolicy{Attempts: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sc.Run(context.Background())
	if err != nil {
		t.Fatalf("pass: %v\nlog:\n%s", err, logs.String())
	}
	if s.Minted+s.Retried != s.Sent+s.Retry+s.Failed+s.Ambiguous {
		t.Fatalf("summary does not balance: %+v", s)
	}
	return s, logs.String(), rec
}

// crow is one subscriptions row with the optional content columns; ""
// and nil are NULL.
type crow struct {
	id, juris, amount, currency, interval, locale, zone string
	count                                               any
	renewsIn                                            time.Duration // default 48h
	trialIn                                             *time.Duration
}

func insertContent(t *testing.T, e *env, rows ...crow) {
	t.Helper()
	null := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	for _, r := range rows {
		if r.renewsIn == 0 {
			r.renewsIn = 48 * time.Hour
		}
		var trial any
		if r.trialIn != nil {
			trial = now.Add(*r.trialIn)
		}
		if _, err := e.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start, jurisdiction,
			amount, currency, billing_interval, billing_interval_count, locale, time_zone, trial_ends_at)
			VALUES ($1, $1 || '@x.com', $2, '2026-12-01', $3, $4::numeric, $5, $6, $7, $8, $9, $10)`,
			r.id, now.Add(r.renewsIn), null(r.juris), null(r.amount), null(r.currency), null(r.interval), r.count,
			null(r.locale), null(r.zone), trial); err != nil {
			t.Fatalf("insert %q: %v", r.id, err)
		}
	}
}

func dur(d time.Duration) *time.Duration { return &d }

func kindsOf(t *testing.T, e *env, id string) map[string]ledger.State {
	t.Helper()
	rows, err := ledger.BySubscription(context.Background(), e.db, id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ledger.State{}
	for _, r := range rows {
		out[r.Kind] = r.State
	}
	return out
}

const trialPolicy = `
schedule: "0 2 * * *"
message_id_domain: n.example.com
notices:
  - kind: renewal_notice_t72
    open_before: 72h
    close_before: 24h
    by_jurisdiction:
      US-CA: {open_before: 30d, close_before: 16d}
  - kind: trial_ending
    anchor: trial_ends_at
    open_before: 21d
    close_before: 3d
    legal:
      US-CA: {min_lead: 3d, max_lead: 21d}
legal:
  US-CA: {min_lead: 15d, max_lead: 45d, requires: [amount]}
rate:
  default: {per_second: 10000, burst: 1000}
  global: {per_second: 100000, burst: 10000}
`

// A trial_ending kind fires only for rows whose trial_ends_at is in its
// window, measured from trial_ends_at; a NULL trial_ends_at is not due
// (not invalid); a trial window that closed while the trial's end is
// still ahead is recorded missed. The renewal kind goes on by renews_at.
func TestTrialEndingFiresOnItsAnchor(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pol := mustPolicy(t, trialPolicy)
	insertContent(t, e,
		crow{id: "trial_in", renewsIn: 10 * 24 * time.Hour, trialIn: dur(10 * 24 * time.Hour)},
		crow{id: "trial_at_open", renewsIn: 21 * 24 * time.Hour, trialIn: dur(21 * 24 * time.Hour)},
		crow{id: "trial_early", renewsIn: 22 * 24 * time.Hour, trialIn: dur(22 * 24 * time.Hour)},
		crow{id: "trial_closed", renewsIn: 2 * 24 * time.Hour, trialIn: dur(2 * 24 * time.Hour)},
		crow{id: "no_trial", renewsIn: 10 * 24 * time.Hour},
		crow{id: "renewing", renewsIn: 48 * time.Hour},
		// US-CA's renewal requires an amount, the kind's own legal rule
		// does not: the trial notice goes.
		crow{id: "ca_trial", juris: "US-CA", renewsIn: 40 * 24 * time.Hour, trialIn: dur(10 * 24 * time.Hour)},
	)
	s, logs, rec := contentPass(t, e, pol, now)
	want := map[string]map[string]ledger.State{
		"trial_in":      {"trial_ending": ledger.Sent},
		"trial_at_open": {"trial_ending": ledger.Sent},
		"trial_early":   {},
		"trial_closed":  {"trial_ending": ledger.Missed, "renewal_notice_t72": ledger.Sent},
		"no_trial":      {},
		"renewing":      {"renewal_notice_t72": ledger.Sent},
		"ca_trial":      {"trial_ending": ledger.Sent},
	}
	for id, w := range want {
		got := kindsOf(t, e, id)
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s: ledger %v, want %v", id, got, w)
		}
	}
	if s.Invalid != 0 || s.Sent != 5 || s.Missed != 1 {
		t.Errorf("summary %+v\n%s", s, logs)
	}
	if e.smtp.Total() != 5 {
		t.Errorf("SMTP received %d, want 5", e.smtp.Total())
	}
	n, ok := rec.notice("trial_in", "trial_ending")
	if !ok || !n.AnchorAt.Equal(now.Add(10*24*time.Hour)) {
		t.Errorf("trial notice anchor %v (sent %v)", n.AnchorAt, ok)
	}
	// A second pass finds everything handled.
	if s2, _, _ := contentPass(t, e, pol, now); s2.Minted != 0 || s2.Suppressed != 5 || e.smtp.Total() != 5 {
		t.Errorf("second pass %+v, SMTP %d", s2, e.smtp.Total())
	}
}

// TestMissingAnchorColumnIsAConfigError moved to internal/subscription
// with the probe it tests (subscription.Open).

// logReasons returns, per subscription id, the reasons logged for it
// (invalid rows) and the fallbacks logged for it.
func logReasons(t *testing.T, logs string) (invalid map[string]string, fallback map[string][]string) {
	t.Helper()
	invalid, fallback = map[string]string{}, map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Msg      string   `json:"message"`
			ID       string   `json:"subscription_id"`
			Reason   string   `json:"reason"`
			Fallback []string `json:"fallback"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		if l.Reason != "" && l.ID != "" {
			invalid[l.ID] = l.Reason
		}
		if len(l.Fallback) > 0 {
			fallback[l.ID] = l.Fallback
		}
	}
	return invalid, fallback
}

// Bad charges are bad rows (invalid, with their reason, never sent); a
// US-CA row without the amount US-CA requires is invalid, missing_amount;
// a malformed or unknown locale or time zone falls back to the defaults,
// is counted and logged by id, and never costs the notice.
func TestWhatANoticeSays(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pol := mustPolicy(t, trialPolicy+"default_locale: en-GB\ndefault_time_zone: Europe/London\n")
	insertContent(t, e,
		crow{id: "ca_no_amount", juris: "US-CA", renewsIn: 20 * 24 * time.Hour},
		crow{id: "ca_amount", juris: "US-CA", renewsIn: 20 * 24 * time.Hour, amount: "12.99", currency: "usd", interval: "Year", locale: "en-US", zone: "America/Los_Angeles"},
		crow{id: "de_no_amount", juris: "DE"},
		crow{id: "at", juris: "AT", amount: "12.990", currency: "EUR", interval: "month", count: 3, locale: "de-AT", zone: "Europe/Vienna"},
		crow{id: "bad_currency", amount: "5", currency: "XYZ"},
		crow{id: "negative", amount: "-1.00", currency: "EUR"},
		crow{id: "amount_no_currency", amount: "5"},
		crow{id: "bad_interval", interval: "fortnight"},
		crow{id: "bad_count", interval: "month", count: 0},
		crow{id: "bad_locale", locale: "not a locale!", amount: "1", currency: "EUR"},
		crow{id: "unknown_locale", locale: "xx-QQ"},
		crow{id: "bad_zone", zone: "Mars/Olympus_Mons"},
		crow{id: "local_zone", zone: "Local"},
	)
	s, logs, rec := contentPass(t, e, pol, now)
	invalid, fallback := logReasons(t, logs)
	wantInvalid := map[string]string{
		"ca_no_amount": "missing_amount", "bad_currency": "unknown_currency", "negative": "negative_amount",
		"amount_no_currency": "missing_currency", "bad_interval": "unknown_billing_interval", "bad_count": "invalid_billing_interval_count",
	}
	if fmt.Sprint(invalid) != fmt.Sprint(wantInvalid) {
		t.Errorf("invalid reasons %v, want %v", invalid, wantInvalid)
	}
	for id := range wantInvalid {
		if st := kindsOf(t, e, id); len(st) != 0 {
			t.Errorf("%s is invalid but has ledger rows %v", id, st)
		}
	}
	wantFallback := map[string][]string{"bad_locale": {"locale"}, "unknown_locale": {"locale"}, "bad_zone": {"time_zone"}, "local_zone": {"time_zone"}}
	if fmt.Sprint(fallback) != fmt.Sprint(wantFallback) {
		t.Errorf("fallbacks logged %v, want %v", fallback, wantFallback)
	}
	if s.Invalid != 6 || s.Sent != 7 || s.Fallback != 4 {
		t.Errorf("summary %+v", s)
	}
	if strings.Contains(logs, "@x.com") {
		t.Error("an address reached the log")
	}
	check := func(id, amount, cur, interval string, count int, locale, zone string) {
		t.Helper()
		n, ok := rec.notice(id, "renewal_notice_t72")
		if !ok {
			t.Fatalf("%s: not sent", id)
		}
		if n.Amount != amount || n.Currency != cur || n.Interval != interval || n.IntervalCount != count || n.Locale != locale || n.TimeZone.String() != zone {
			t.Errorf("%s: notice says %q %q %q×%d %q %v, want %q %q %q×%d %q %s", id,
				n.Amount, n.Currency, n.Interval, n.IntervalCount, n.Locale, n.TimeZone, amount, cur, interval, count, locale, zone)
		}
	}
	check("ca_amount", "12.99", "USD", "year", 1, "en-US", "America/Los_Angeles")
	check("at", "12.990", "EUR", "month", 3, "de-AT", "Europe/Vienna")
	check("de_no_amount", "", "", "", 0, "en-GB", "Europe/London")
	check("bad_locale", "1", "EUR", "", 0, "en-GB", "Europe/London")
	check("unknown_locale", "", "", "", 0, "en-GB", "Europe/London")
	check("bad_zone", "", "", "", 0, "en-GB", "Europe/London")
}

const quietPolicy = `
schedule: "0 * * * *"
message_id_domain: n.example.com
quiet_hours: {from: "21:00", to: "08:00"}
notices:
  - kind: renewal_notice_t72
    open_before: 72h
    close_before: 24h
rate:
  default: {per_second: 10000, burst: 1000}
  global: {per_second: 100000, burst: 10000}
`

// A notice due inside the recipient's quiet hours is deferred while a
// later pass can send it outside them before its window closes; one whose
// window closes first goes now (the law comes first); a recipient whose
// day it is gets it now. The deferred one goes with the first pass after
// the quiet hours.
func TestQuietHours(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pol := mustPolicy(t, quietPolicy)
	// now is 02:00 UTC: quiet in London, 11:00 in Tokyo.
	insertContent(t, e,
		crow{id: "london", zone: "Europe/London"},                                               // closes in 24h: deferred
		crow{id: "london_closing", zone: "Europe/London", renewsIn: 24*time.Hour + 3*time.Hour}, // closes 05:00, before 08:00
		crow{id: "no_zone"}, // default UTC: quiet too
		crow{id: "tokyo", zone: "Asia/Tokyo"},
	)
	s, logs, _ := contentPass(t, e, pol, now)
	if s.Deferred != 2 || s.DeferredQuietHours != 2 || s.Sent != 2 || s.Eligible != 4 {
		t.Errorf("summary %+v", s)
	}
	if !strings.Contains(logs, `"reason":"quiet_hours"`) {
		t.Errorf("no quiet_hours line in the log:\n%s", logs)
	}
	for id, want := range map[string]ledger.State{"london": "", "london_closing": ledger.Sent, "no_zone": "", "tokyo": ledger.Sent} {
		if got := e.state(id); got != want {
			t.Errorf("%s: state %q, want %q", id, got, want)
		}
	}
	// Still quiet at 07:00: nothing more.
	if s, _, _ := contentPass(t, e, pol, now.Add(5*time.Hour)); s.Minted != 0 || s.Deferred != 2 {
		t.Errorf("07:00 pass %+v", s)
	}
	s, _, _ = contentPass(t, e, pol, now.Add(6*time.Hour)) // 08:00
	if s.Minted != 2 || s.Sent != 2 || s.Deferred != 0 || e.smtp.Total() != 4 {
		t.Errorf("08:00 pass %+v, SMTP %d", s, e.smtp.Total())
	}
}

// With a daily schedule that fires inside a recipient's quiet hours,
// no later pass can reach them outside those hours: deferring would only
// miss the notice, so it goes now.
func TestQuietHoursNeverDeferPastTheLastPass(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pol := mustPolicy(t, strings.Replace(quietPolicy, `"0 * * * *"`, `"0 2 * * *"`, 1))
	insertContent(t, e, crow{id: "london", zone: "Europe/London"})
	s, _, _ := contentPass(t, e, pol, now)
	if s.Sent != 1 || s.Deferred != 0 {
		t.Errorf("summary %+v", s)
	}
}
