package scan

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/subscription"
	"scan/internal/suppress"
)

const classifyPolicy = `
schedule: "0 * * * *"
message_id_domain: n.example.com
quiet_hours: {from: "21:00", to: "08:00"}
notices:
  - kind: k
    open_before: 72h
    close_before: 24h
    channels: [email, sms]
rate:
  default: {per_second: 10000, burst: 1000}
  global: {per_second: 100000, burst: 10000}
  sms: {per_second: 1000, burst: 100}
`

// classifyPass is a pass at now over classifyPolicy, without a database:
// classify reads none.
func classifyPass(t *testing.T, now time.Time) *Pass {
	t.Helper()
	pol, err := policy.Parse(strings.NewReader(classifyPolicy))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Policy: pol, Now: now, RunID: "t", Secret: []byte(strings.Repeat("s", 32))}
	keyer, _ := notice.NewKeyer(cfg.Secret)
	keys, _ := suppress.NewKeys(cfg.Secret, nil)
	s := &Pass{cfg: cfg, keyer: keyer, keys: keys, log: zerolog.Nop()}
	if s.content, err = newPassContent(cfg); err != nil {
		t.Fatal(err)
	}
	s.selectGroups()
	return s
}

// Each kind of row gets its verdict, on each path: the email pass (and
// its retry re-check), the sms stage and the missed-window path.
func TestClassify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC) // quiet in London, 11:00 in Tokyo
	s := classifyPass(t, now)
	sel := s.sels[notice.ChannelEmail][0][0]
	str := func(v string) *string { return &v }
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	period := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	row := func(edit func(r *subscription.Row)) subscription.Row {
		r := subscription.Row{ID: "sub1", Email: str("a@x.com"), Phone: str("+14155550100"), RenewsAt: at(48 * time.Hour),
			AnchorAt: at(48 * time.Hour), PeriodStart: &period, TimeZone: str("Asia/Tokyo")}
		if edit != nil {
			edit(&r)
		}
		return r
	}
	email := ask{sel: sel, channel: notice.ChannelEmail}
	retry := ask{sel: sel, channel: notice.ChannelEmail, retry: true}
	sms := ask{sel: sel, channel: notice.ChannelSMS}
	missed := ask{sel: sel, channel: notice.ChannelEmail, missed: true}
	for _, tc := range []struct {
		name   string
		r      subscription.Row
		a      ask
		is     verdictIs
		reason string
		keyed  bool
		to     string // dueNow: the notice's address
	}{
		{"due by email", row(nil), email, dueNow, "", true, "a@x.com"},
		{"null anchor", row(func(r *subscription.Row) { r.AnchorAt = nil }), email, notDue, "", false, ""},
		{"no email", row(func(r *subscription.Row) { r.Email = nil }), email, invalid, "no email", false, ""},
		{"empty id", row(func(r *subscription.Row) { r.ID = "" }), email, invalid, "empty subscription id", false, ""},
		{"negative revision", row(func(r *subscription.Row) { r.Revision = -1 }), email, invalid, "notice_revision is negative", false, ""},
		{"quiet hours", row(func(r *subscription.Row) { r.TimeZone = str("Europe/London") }), email, deferred, "", true, ""},
		{"retry in its window", row(nil), retry, dueNow, "", true, "a@x.com"},
		{"retry out of its window", row(func(r *subscription.Row) { r.AnchorAt, r.RenewsAt = at(100*time.Hour), at(100*time.Hour) }), retry, notDue, "", false, ""},
		{"retry with no renews_at", row(func(r *subscription.Row) { r.RenewsAt = nil }), retry, notDue, "", false, ""},
		{"due by sms", row(nil), sms, dueNow, "", true, "+14155550100"},
		{"sms without a phone", row(func(r *subscription.Row) { r.Phone = str("0415") }), sms, unreachable, "phone", true, ""},
		{"sms in quiet hours", row(func(r *subscription.Row) { r.TimeZone = str("Europe/London") }), sms, deferred, "", true, ""},
		{"sms without a period", row(func(r *subscription.Row) { r.PeriodStart = nil }), sms, invalid, "no notice tuple", false, ""},
		{"missed", row(func(r *subscription.Row) { r.Email = nil }), missed, closed, "", true, ""},
		{"missed without an anchor", row(func(r *subscription.Row) { r.AnchorAt = nil }), missed, notDue, "", false, ""},
	} {
		v := s.classify(s.content, tc.r, tc.a)
		if v.is != tc.is || v.reason != tc.reason || v.keyed != tc.keyed {
			t.Errorf("%s: verdict %d %q keyed %v, want %d %q keyed %v", tc.name, v.is, v.reason, v.keyed, tc.is, tc.reason, tc.keyed)
			continue
		}
		if tc.to != "" && v.dn.n.To != tc.to {
			t.Errorf("%s: notice to %q, want %q", tc.name, v.dn.n.To, tc.to)
		}
		if v.keyed && (v.dn.claim.SubscriptionID != "sub1" || !v.dn.claim.WindowClosesAt.Equal(now.Add(24*time.Hour)) || v.dn.claim.Rule != sel.Rule) {
			t.Errorf("%s: claim %+v, want sub1's closing %v under %q", tc.name, v.dn.claim, now.Add(24*time.Hour), sel.Rule)
		}
		if v.sel != sel.Key() {
			t.Errorf("%s: group %q, want %q", tc.name, v.sel, sel.Key())
		}
	}
	// The missed path keys the claim for its channel.
	r := row(nil)
	tu := notice.Tuple{SubscriptionID: r.ID, PeriodStart: period, Kind: "k"}
	if v := s.classify(s.content, r, missed); v.dn.claim.Key != s.keyer.Key(tu) {
		t.Errorf("missed email key %q, want %q", v.dn.claim.Key, s.keyer.Key(tu))
	}
	missed.channel = notice.ChannelSMS
	if v := s.classify(s.content, r, missed); v.dn.claim.Key != s.keyer.ChannelKey(tu, notice.ChannelSMS) {
		t.Errorf("missed sms key %q, want the sms key", v.dn.claim.Key)
	}
}
