package scan_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/message"
	"scan/internal/notice"
	"scan/internal/pgtest"
	"scan/internal/policy"
	"scan/internal/scan"
	"scan/internal/send"
	"scan/internal/smtptest"
	"scan/sql/reference"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const secret = "test-secret-0123456789abcdef0123456789"

var now = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

type env struct {
	t    *testing.T
	db   *sqlx.DB
	smtp *smtptest.Server
	pol  *policy.Policy
}

const testPolicy = `
schedule: "0 2 * * *"
message_id_domain: n.example.com
notices:
  - kind: renewal_notice_t72
    open_before: 72h
    close_before: 24h
    by_jurisdiction:
      US-CA: {open_before: 30d, close_before: 16d}
legal:
  US-CA: {min_lead: 15d, max_lead: 45d}
rate:
  default: {per_second: 10000, burst: 1000}
  global: {per_second: 100000, burst: 10000}
concurrency: 8
`

func setup(t *testing.T, opts ...smtptest.Option) *env {
	t.Helper()
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, reference.Subscriptions); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(strings.NewReader(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, smtp: smtptest.New(t, opts...), pol: pol}
}

type sub struct {
	id, email, status, jurisdiction string
	renewsIn                        time.Duration // renews_at = now + renewsIn
	revision                        int
}

func (e *env) insert(subs ...sub) {
	e.t.Helper()
	for _, s := range subs {
		if s.status == "" {
			s.status = "active"
		}
		var j any
		if s.jurisdiction != "" {
			j = s.jurisdiction
		}
		_, err := e.db.Exec(`INSERT INTO subscriptions (id, email, status, renews_at, period_start, jurisdiction, notice_revision)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (id) DO UPDATE SET email = $2, status = $3, renews_at = $4, notice_revision = $7`,
			s.id, s.email, s.status, now.Add(s.renewsIn), "2026-12-01", j, s.revision)
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) many(n int, domain string) {
	e.t.Helper()
	_, err := e.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start)
		SELECT 'sub_' || lpad(i::text, 6, '0'), 'u' || i || '@' || $2, $3::timestamptz, '2026-12-01'
		FROM generate_series(1, $1) i`, n, domain, now.Add(48*time.Hour))
	if err != nil {
		e.t.Fatal(err)
	}
}

type passOpt func(*scan.Config)

func (e *env) pass(ctx context.Context, opts ...passOpt) (scan.Summary, error) {
	e.t.Helper()
	// 10 s, as the other tests' senders: at 2 s a loaded CI machine (the
	// race detector, every package's tests at once) once timed out a reply
	// that was merely slow, and a notice came out ambiguous.
	sender, err := send.NewSMTP(send.SMTPConfig{URL: e.smtp.URL(), Pool: 4, Timeout: 10 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	defer sender.Close()
	r, err := message.NewRenderer(message.RenderConfig{From: e.pol.From, MessageIDDomain: e.pol.MessageIDDomain, CancelURL: e.pol.CancelURL})
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := scan.Config{
		Policy: e.pol, Secret: []byte(secret), RunID: fmt.Sprintf("run-%d", time.Now().UnixNano()), Now: now,
		BatchSize: 100, Retry: send.RetryPolicy{Attempts: 2, Backoff: time.Millisecond, MaxBackoff: time.Millisecond},
	}
	for _, o := range opts {
		o(&cfg)
	}
	sc, err := newPass(ctx, e.db, sender, r, zerolog.Nop(), cfg)
	if err != nil {
		return scan.Summary{}, err
	}
	return sc.Run(ctx)
}

func (e *env) mustPass(opts ...passOpt) scan.Summary {
	e.t.Helper()
	s, err := e.pass(context.Background(), opts...)
	if err != nil {
		e.t.Fatalf("pass: %v", err)
	}
	if s.Minted+s.Retried != s.Sent+s.Retry+s.Failed+s.Ambiguous {
		e.t.Fatalf("summary does not balance: %+v", s)
	}
	return s
}

func (e *env) state(id string) ledger.State {
	e.t.Helper()
	rows, err := ledger.BySubscription(context.Background(), e.db, id)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(rows) == 0 {
		return ""
	}
	return rows[len(rows)-1].State
}

func keyOf(id string, rev int) string {
	k, _ := notice.NewKeyer([]byte(secret))
	return k.Key(notice.Tuple{SubscriptionID: id, PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Kind: "renewal_notice_t72", Revision: rev})
}

func msgID(id string, rev int) string { return keyOf(id, rev)[:32] + "@n.example.com" }

func TestWindowBoundaries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.insert(
		sub{id: "at_open", email: "a@x.com", renewsIn: 72 * time.Hour},                           // now == renews-72h: open
		sub{id: "before_open", email: "b@x.com", renewsIn: 72*time.Hour + time.Second},           // not yet
		sub{id: "at_close", email: "c@x.com", renewsIn: 24 * time.Hour},                          // now == renews-24h: closed
		sub{id: "before_close", email: "d@x.com", renewsIn: 24*time.Hour + time.Second},          // last second
		sub{id: "ca_in", email: "e@x.com", renewsIn: 20 * 24 * time.Hour, jurisdiction: "US-CA"}, // US-CA window 30d..16d
		sub{id: "ca_default", email: "f@x.com", renewsIn: 48 * time.Hour, jurisdiction: "US-CA"}, // default window does not apply
		sub{id: "de_default", email: "g@x.com", renewsIn: 48 * time.Hour, jurisdiction: "DE"},    // unknown: default window
		sub{id: "inactive", email: "h@x.com", renewsIn: 48 * time.Hour, status: "cancelled"},     // not eligible
	)
	s := e.mustPass()
	want := map[string]ledger.State{
		"at_open": ledger.Sent, "before_open": "", "at_close": ledger.Missed, "before_close": ledger.Sent,
		"ca_in": ledger.Sent, "ca_default": ledger.Missed, "de_default": ledger.Sent, "inactive": "",
	}
	for id, st := range want {
		if got := e.state(id); got != st {
			t.Errorf("%s: state %q, want %q", id, got, st)
		}
	}
	if s.Minted != 4 || s.Sent != 4 || s.Missed != 2 || s.Eligible != 4 {
		t.Errorf("summary = %+v", s)
	}
	if e.smtp.Total() != 4 {
		t.Errorf("SMTP received %d, want 4", e.smtp.Total())
	}
}

func TestSecondPassMintsNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.many(250, "example.com")
	first := e.mustPass()
	if first.Minted != 250 || first.Sent != 250 {
		t.Fatalf("first = %+v", first)
	}
	second := e.mustPass()
	if second.Minted != 0 || second.Sent != 0 || second.Suppressed != 250 || second.Eligible != 250 {
		t.Fatalf("second = %+v", second)
	}
	if e.smtp.Total() != 250 {
		t.Fatalf("SMTP received %d, want 250", e.smtp.Total())
	}
}

func TestConcurrentPassesSendEachNoticeOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.many(600, "example.com")
	var wg sync.WaitGroup
	var mu sync.Mutex
	minted := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := e.pass(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			minted += s.Minted
			mu.Unlock()
		}()
	}
	wg.Wait()
	if minted != 600 {
		t.Fatalf("minted %d over 8 passes, want 600", minted)
	}
	if e.smtp.Total() != 600 {
		t.Fatalf("SMTP received %d, want 600", e.smtp.Total())
	}
	for _, m := range e.smtp.Messages() {
		if n := e.smtp.Count(m.MessageID); n != 1 {
			t.Fatalf("%s received %d times", m.MessageID, n)
		}
	}
}

func TestCancelledBeforePassSendsNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.many(50, "example.com")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.pass(ctx); err == nil {
		t.Fatal("a cancelled pass reported success")
	}
	if e.smtp.Total() != 0 {
		t.Fatalf("SMTP received %d", e.smtp.Total())
	}
	counts, _ := ledgertest.CountByState(context.Background(), e.db)
	if len(counts) != 0 {
		t.Fatalf("ledger = %v, want empty", counts)
	}
}

func TestProviderAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		mode  smtptest.Mode
		state ledger.State
		field func(scan.Summary) int
	}{
		{"4xx at RCPT is retry", smtptest.TempFailRcpt, ledger.Retry, func(s scan.Summary) int { return s.Retry }},
		{"4xx after DATA is retry", smtptest.TempFailData, ledger.Retry, func(s scan.Summary) int { return s.Retry }},
		{"5xx is failed", smtptest.PermFailRcpt, ledger.Failed, func(s scan.Summary) int { return s.Failed }},
		{"5xx after DATA is failed", smtptest.PermFailData, ledger.Failed, func(s scan.Summary) int { return s.Failed }},
		{"hang after DATA stays claimed", smtptest.HangAfterData, ledger.Claimed, func(s scan.Summary) int { return s.Ambiguous }},
		{"reset after DATA stays claimed", smtptest.CloseAfterData, ledger.Claimed, func(s scan.Summary) int { return s.Ambiguous }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, smtptest.WithMode(tc.mode))
			e.insert(sub{id: "s1", email: "a@x.com", renewsIn: 48 * time.Hour})
			s := e.mustPass()
			if tc.field(s) != 1 {
				t.Fatalf("summary = %+v", s)
			}
			if got := e.state("s1"); got != tc.state {
				t.Fatalf("state = %s, want %s", got, tc.state)
			}
			if tc.state == ledger.Claimed {
				e.smtp.Release()
				// Quarantined: the next pass must not send it again.
				s2 := e.mustPass()
				if s2.Minted != 0 || s2.Retried != 0 || s2.Quarantine != 1 {
					t.Fatalf("second pass = %+v", s2)
				}
				if n := e.smtp.Count(msgID("s1", 0)); n != 1 {
					t.Fatalf("received %d times", n)
				}
			}
		})
	}
}

func TestRetryIsReclaimedByTheNextPass(t *testing.T) {
	t.Parallel()
	e := setup(t, smtptest.WithMode(smtptest.TempFailRcpt))
	e.insert(sub{id: "s1", email: "a@x.com", renewsIn: 48 * time.Hour})
	if s := e.mustPass(); s.Retry != 1 {
		t.Fatalf("first = %+v", s)
	}
	e.smtp.SetMode(smtptest.Accept)
	s := e.mustPass()
	if s.Retried != 1 || s.Sent != 1 || s.Minted != 0 {
		t.Fatalf("second = %+v", s)
	}
	if e.state("s1") != ledger.Sent || e.smtp.Count(msgID("s1", 0)) != 1 {
		t.Fatalf("state %s, received %d", e.state("s1"), e.smtp.Count(msgID("s1", 0)))
	}
}

// Retry rows are listed from the ledger in key order and their
// subscriptions looked up by id: whatever the page size, every row still
// due is re-claimed once, and a row whose subscription was cancelled or
// moved to a new revision is left out (the new revision is minted), both
// by the pass and by CountDue.
func TestRetryPagesLeaveOutMovedSubscriptions(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 2, 3, 100} {
		t.Run(fmt.Sprint(batch), func(t *testing.T) {
			t.Parallel()
			e := setup(t, smtptest.WithMode(smtptest.TempFailRcpt))
			for i := range 7 {
				e.insert(sub{id: fmt.Sprintf("s%d", i), email: fmt.Sprintf("a%d@x.com", i), renewsIn: 48 * time.Hour})
			}
			if s := e.mustPass(); s.Retry != 7 {
				t.Fatalf("first = %+v", s)
			}
			e.insert(sub{id: "s5", email: "a5@x.com", status: "cancelled", renewsIn: 48 * time.Hour},
				sub{id: "s6", email: "a6@x.com", renewsIn: 48 * time.Hour, revision: 1})
			e.smtp.SetMode(smtptest.Accept)
			ctx := context.Background()
			sc, err := newPass(ctx, e.db, nil, nil, zerolog.Nop(), scan.Config{Policy: e.pol, Secret: []byte(secret), RunID: "count", Now: now, BatchSize: batch})
			if err != nil {
				t.Fatal(err)
			}
			if due, err := sc.CountDue(ctx); err != nil || due != 6 {
				t.Fatalf("CountDue = %d, %v; want 5 retries and 1 new revision", due, err)
			}
			s := e.mustPass(func(c *scan.Config) { c.BatchSize = batch })
			if s.Retried != 5 || s.Minted != 1 || s.Sent != 6 {
				t.Fatalf("second = %+v", s)
			}
			for i := range 5 {
				if n := e.smtp.Count(msgID(fmt.Sprintf("s%d", i), 0)); n != 1 {
					t.Errorf("s%d received %d times", i, n)
				}
			}
			if n := e.smtp.Count(msgID("s6", 1)); n != 1 || e.smtp.Total() != 6 {
				t.Errorf("s6 revision 1 received %d times, %d in all", n, e.smtp.Total())
			}
		})
	}
}

func TestRetryBecomesMissedWhenTheWindowCloses(t *testing.T) {
	t.Parallel()
	e := setup(t, smtptest.WithMode(smtptest.TempFailRcpt))
	e.insert(sub{id: "s1", email: "a@x.com", renewsIn: 48 * time.Hour})
	e.mustPass()
	s := e.mustPass(func(c *scan.Config) { c.Now = now.Add(24 * time.Hour) })
	if s.Missed != 1 || e.state("s1") != ledger.Missed {
		t.Fatalf("summary %+v, state %s", s, e.state("s1"))
	}
}

func TestBadRowsAreCountedAndSkipped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.insert(
		sub{id: "ok", email: "a@x.com", renewsIn: 48 * time.Hour},
		sub{id: "no_email", email: "", renewsIn: 48 * time.Hour},
		sub{id: "no_at", email: "ax.com", renewsIn: 48 * time.Hour},
		sub{id: "two_at", email: "a@b@x.com", renewsIn: 48 * time.Hour},
		sub{id: "crlf", email: "a@x.com\r\nBcc: victim@y.com", renewsIn: 48 * time.Hour},
		sub{id: strings.Repeat("x", 300), email: "a@x.com", renewsIn: 48 * time.Hour},
	)
	_, err := e.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start) VALUES ('null_renews', 'a@x.com', NULL, '2026-12-01')`)
	if err != nil {
		t.Fatal(err)
	}
	// A jurisdiction with its own window: still counted, once.
	_, err = e.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start, jurisdiction) VALUES ('null_ca', 'a@x.com', NULL, '2026-12-01', 'US-CA')`)
	if err != nil {
		t.Fatal(err)
	}
	s := e.mustPass()
	if s.Invalid != 7 || s.Minted != 1 || s.Sent != 1 {
		t.Fatalf("summary = %+v", s)
	}
	// Fixed tomorrow, sent tomorrow.
	e.insert(sub{id: "no_email", email: "fixed@x.com", renewsIn: 48 * time.Hour})
	if s := e.mustPass(); s.Minted != 1 || s.Invalid != 6 {
		t.Fatalf("after fix = %+v", s)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.many(120, "example.com")
	e.insert(sub{id: "closed", email: "z@x.com", renewsIn: 12 * time.Hour}, sub{id: "bad", email: "nope", renewsIn: 48 * time.Hour})
	sender, _ := send.NewOutbox(t.TempDir())
	r, _ := message.NewRenderer(message.RenderConfig{From: e.pol.From, MessageIDDomain: e.pol.MessageIDDomain, CancelURL: e.pol.CancelURL})
	sc, err := newPass(context.Background(), e.db, sender, r, zerolog.Nop(), scan.Config{Policy: e.pol, Secret: []byte(secret), RunID: "dry", Now: now, BatchSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	d, err := sc.DryRun(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.WouldMint != 120 || d.Invalid != 1 || d.WouldMiss != 1 || d.AlreadyClaimed != 0 || d.Eligible != 120 {
		t.Fatalf("dry run = %+v", d)
	}
	counts, _ := ledgertest.CountByState(context.Background(), e.db)
	if len(counts) != 0 {
		t.Fatalf("dry run wrote %v", counts)
	}
	e.mustPass()
	d, _ = sc.DryRun(context.Background())
	// The bad row ("nope", no other channel) now waits in the ledger as
	// invalid_address: the dry run counts it invalid, as a pass does, and
	// not with the 120 claimed.
	if d.WouldMint != 0 || d.AlreadyClaimed != 120 || d.Invalid != 1 || d.Eligible != 120 {
		t.Fatalf("dry run after a pass = %+v", d)
	}
}

func TestMaxMintRefusesBeforeClaiming(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.many(30, "example.com")
	_, err := e.pass(context.Background(), func(c *scan.Config) { c.MaxMint = ptr(10) })
	if err == nil || !strings.Contains(err.Error(), "max-mint") {
		t.Fatalf("err = %v", err)
	}
	if e.smtp.Total() != 0 {
		t.Fatal("sent despite --max-mint")
	}
	if s := e.mustPass(func(c *scan.Config) { c.MaxMint = ptr(30) }); s.Sent != 30 {
		t.Fatalf("summary = %+v", s)
	}
}

func ptr(n int) *int { return &n }

// The zero Config sets no limit; MaxMint 0 refuses any mint, and a
// negative one is a configuration error.
func TestMaxMintZeroValue(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.many(3, "example.com")
	_, err := e.pass(context.Background(), func(c *scan.Config) { c.MaxMint = ptr(0) })
	if !errors.Is(err, scan.ErrMaxMint) || e.smtp.Total() != 0 {
		t.Fatalf("MaxMint 0: err %v, %d sent; want ErrMaxMint and nothing sent", err, e.smtp.Total())
	}
	_, err = e.pass(context.Background(), func(c *scan.Config) { c.MaxMint = ptr(-1) })
	var ce *scan.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("MaxMint -1: err %v, want a ConfigError", err)
	}
	if s := e.mustPass(func(c *scan.Config) { c.MaxMint = nil }); s.Sent != 3 {
		t.Fatalf("no MaxMint: summary = %+v, want 3 sent", s)
	}
}

func TestChangedSecretSendsNothingAgain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.many(40, "example.com")
	e.mustPass()
	s := e.mustPass(func(c *scan.Config) { c.Secret = []byte("a-completely-different-secret-of-32-bytes!") })
	if s.Minted != 0 || s.Sent != 0 || s.Suppressed != 40 || !s.KeyMismatch {
		t.Fatalf("summary after rotation = %+v", s)
	}
	if e.smtp.Total() != 40 {
		t.Fatalf("SMTP received %d, want 40", e.smtp.Total())
	}
}

func TestRevisionSendsOneCorrectedNoticeWithTheSameLink(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.insert(sub{id: "s1", email: "a@x.com", renewsIn: 48 * time.Hour})
	e.mustPass()
	e.insert(sub{id: "s1", email: "a@x.com", renewsIn: 48 * time.Hour, revision: 1})
	if s := e.mustPass(); s.Minted != 1 || s.Sent != 1 {
		t.Fatalf("revision pass = %+v", s)
	}
	if s := e.mustPass(); s.Minted != 0 {
		t.Fatalf("third pass = %+v", s)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 2 {
		t.Fatalf("received %d messages, want 2", len(msgs))
	}
	link := func(raw []byte) string {
		s := string(raw)
		i := strings.Index(s, "token=")
		if i < 0 {
			t.Fatalf("no cancellation link in %q", s)
		}
		return s[i : i+6+32]
	}
	if link(msgs[0].Raw) != link(msgs[1].Raw) {
		t.Fatalf("links differ: %s vs %s", link(msgs[0].Raw), link(msgs[1].Raw))
	}
	rows, _ := ledger.BySubscription(context.Background(), e.db, "s1")
	if len(rows) != 2 || rows[1].Supersedes == nil || *rows[1].Supersedes != rows[0].NoticeKey {
		t.Fatalf("revision row does not point at the notice it supersedes: %+v", rows)
	}
}

// TestSourceMustHaveTheColumns moved to internal/subscription with the
// probe it tests (subscription.Open).

func TestRedirectKeepsTheDomainAndRecordsIt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.insert(sub{id: "s1", email: "real@customer.com", renewsIn: 48 * time.Hour})
	e.mustPass(func(c *scan.Config) { c.RedirectTo = "qa@staging.test" })
	msgs := e.smtp.Messages()
	if len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != "qa@staging.test" {
		t.Fatalf("messages = %+v", msgs)
	}
	rows, _ := ledger.BySubscription(context.Background(), e.db, "s1")
	if rows[0].RedirectedTo == nil || *rows[0].RedirectedTo != "qa@staging.test" || *rows[0].Domain != "customer.com" {
		t.Fatalf("row = %+v", rows[0])
	}
}

// A pass cancelled mid-way (SIGTERM) hands back every claim it never
// sent as retry, so nothing is left in quarantine that never left the
// process, and the next pass sends the rest exactly once.
func TestShutdownReleasesUnsentClaims(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := setup(t, smtptest.OnMessage(func(smtptest.Received) { cancel() }), smtptest.WithLatency(2*time.Millisecond))
	e.many(300, "example.com")
	s, err := e.pass(ctx)
	if err == nil {
		t.Fatal("a cancelled pass reported success")
	}
	counts, _ := ledgertest.CountByState(context.Background(), e.db)
	if counts[ledger.Claimed] != 0 {
		t.Fatalf("claims left in quarantine after shutdown: %v (summary %+v)", counts, s)
	}
	if counts[ledger.Retry]+counts[ledger.Sent] != s.Minted {
		t.Fatalf("states %v do not cover the %d minted", counts, s.Minted)
	}
	if s.Sent == 300 {
		t.Fatal("the pass was not interrupted; the test proves nothing")
	}
	s2 := e.mustPass()
	if e.smtp.Total() != 300 {
		t.Fatalf("SMTP received %d, want 300 (second pass %+v)", e.smtp.Total(), s2)
	}
	for _, m := range e.smtp.Messages() {
		if e.smtp.Count(m.MessageID) != 1 {
			t.Fatalf("%s received twice", m.MessageID)
		}
	}
}

// A bug that panics while outcomes are recorded ends the pass with an
// error (exit 1 upstream) instead of killing the process, and sends
// nothing twice on the next pass: the unrecorded claims stay quarantined.
func TestRecorderPanicEndsThePass(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.many(30, "example.com")
	_, err := e.pass(context.Background(), func(c *scan.Config) {
		c.Hooks.AfterAccepted = func(string) { panic("boom") }
	})
	if err == nil || !strings.Contains(err.Error(), "panic: boom") {
		t.Fatalf("err = %v", err)
	}
	s := e.mustPass()
	counts, _ := ledgertest.CountByState(context.Background(), e.db)
	if s.Quarantine < 1 || counts[ledger.Sent]+counts[ledger.Claimed] != 30 || e.smtp.Total() > 30 {
		t.Fatalf("second pass = %+v, ledger %v, received %d", s, counts, e.smtp.Total())
	}
	for _, m := range e.smtp.Messages() {
		if e.smtp.Count(m.MessageID) != 1 {
			t.Fatalf("%s received twice", m.MessageID)
		}
	}
}
