package ask_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ask"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/pgtest"
	"scan/internal/provider/mailgun"
	"scan/internal/provider/postmark"
	"scan/internal/provider/sendgrid"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// now is when the tests ask; claims are made relative to it.
var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func key(i int) string { return fmt.Sprintf("%032x%032x", i, i) }

func msgID(i int) string { return key(i)[:32] + "@n.example.com" }

// claim describes one claim of a test's ledger: claimed age ago.
type claim struct {
	age time.Duration
}

// setup returns a migrated ledger holding claims 1..len(cs), none with an
// outcome, each claimed its age before now.
func setup(t *testing.T, cs ...claim) *sqlx.DB {
	t.Helper()
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		n := i + 1
		cl := ledger.Claim{Key: key(n), Tuple: notice.Tuple{SubscriptionID: fmt.Sprintf("sub_%d", n), Kind: "renewal_notice_t72",
			PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}, RenewsAt: now.Add(48 * time.Hour),
			WindowClosesAt: now.Add(24 * time.Hour), Domain: "example.com", MessageID: msgID(n)}
		if won, err := ledger.Insert(ctx, db, ledger.ClaimOptions{State: ledger.Claimed, Now: now.Add(-c.age), RunID: "crashed"}, []ledger.Claim{cl}); err != nil || len(won) != 1 {
			t.Fatalf("claim %d: won %d, %v", n, len(won), err)
		}
	}
	return db
}

// states returns the first letter of each claim's state, 1..n.
func states(t *testing.T, db *sqlx.DB, n int) string {
	t.Helper()
	var b []byte
	for i := 1; i <= n; i++ {
		r, err := ledger.Get(context.Background(), db, key(i))
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, string(r.State)[0])
	}
	return string(b)
}

// fast is a client configuration for the stand-ins: no waiting between
// requests or retries beyond a millisecond.
func fast(base string) ask.ClientConfig {
	return ask.ClientConfig{BaseURL: base, Rate: 1000, Backoff: time.Millisecond}
}

// reconcile runs ask.Reconcile at now over every claim older than 15m.
func reconcile(t *testing.T, db *sqlx.DB, p ask.Provider) ask.Result {
	t.Helper()
	res, err := ask.Reconcile(context.Background(), db, p, ask.RunConfig{By: "ask", OlderThan: 15 * time.Minute, Now: func() time.Time { return now }}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The rule for "not found", on both sides of each provider's delay, and
// past its retention.
func TestNotFoundWaitsForTheIndexingDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider         string
		delay, retention time.Duration
		newProvider      func(base string) (ask.Provider, error)
	}{
		{"postmark", postmark.Delay, postmark.Retention, func(b string) (ask.Provider, error) { return postmark.NewAsker("server-token", fast(b)) }},
		{"mailgun", mailgun.Delay, mailgun.Retention, func(b string) (ask.Provider, error) { return mailgun.NewAsker("key-1", "n.example.com", fast(b)) }},
		{"sendgrid", sendgrid.Delay, sendgrid.Retention, func(b string) (ask.Provider, error) { return sendgrid.NewAsker("SG.key", fast(b)) }},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			srv := newStandIn(t, tc.provider, nil)
			p, err := tc.newProvider(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				age  time.Duration
				want string // pending, not_found, unknown
			}{
				{tc.delay - time.Minute, "pending"},
				{tc.delay + time.Minute, "not_found"},
				{tc.retention + time.Hour, "unknown"},
			} {
				a, err := p.About(context.Background(), ask.Claim{Key: key(9), MessageID: msgID(9), Attempt: 1, ClaimedAt: now.Add(-c.age)}, now)
				if err != nil {
					t.Fatal(err)
				}
				got := "not_found"
				switch {
				case a.Pending:
					got = "pending"
				case a.Unknown != "":
					got = "unknown"
				case len(a.Settlements) != 1 || a.Settlements[0].To != ledger.Retry || a.Settlements[0].Kind != ledger.KindNotSent:
					got = fmt.Sprintf("%+v", a)
				}
				if got != c.want {
					t.Errorf("claimed %v ago: %s, want %s", c.age, got, c.want)
				}
			}
		})
	}
}

// Each provider's record settles the claims it names as the provider's
// webhooks would (delivered: sent; a hard bounce: failed); a claim it has
// no record of is not_sent (retry) past the delay and stays claimed
// before it.
func TestReconcileSettlesFromEachProvider(t *testing.T) {
	t.Parallel()
	claims := []claim{{2 * time.Hour}, {2 * time.Hour}, {2 * time.Hour}, {20 * time.Minute}, {2 * time.Hour}}
	for _, tc := range []struct {
		provider string
		msgs     []sent
		p        func(base string) (ask.Provider, error)
	}{
		{"postmark", []sent{{1, 1, 119 * time.Minute, []string{"Delivered"}}, {2, 1, 119 * time.Minute, []string{"Bounced:HardBounce"}},
			{5, 1, 119 * time.Minute, []string{"Transient", "Delivered", "Opened"}}},
			func(b string) (ask.Provider, error) { return postmark.NewAsker("server-token", fast(b)) }},
		{"mailgun", []sent{{1, 1, 119 * time.Minute, []string{"accepted", "delivered"}}, {2, 1, 119 * time.Minute, []string{"accepted", "failed:permanent"}},
			{5, 1, 119 * time.Minute, []string{"accepted"}}},
			func(b string) (ask.Provider, error) { return mailgun.NewAsker("key-1", "n.example.com", fast(b)) }},
		{"sendgrid", []sent{{1, 1, 119 * time.Minute, []string{"processed", "delivered"}}, {2, 1, 119 * time.Minute, []string{"processed", "bounce:bounce"}},
			{5, 1, 119 * time.Minute, []string{"processed", "deferred"}}},
			func(b string) (ask.Provider, error) { return sendgrid.NewAsker("SG.key", fast(b)) }},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			db := setup(t, claims...)
			srv := newStandIn(t, tc.provider, tc.msgs)
			p, err := tc.p(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			res := reconcile(t, db, p)
			if got := states(t, db, 5); got != "sfrcs" {
				t.Errorf("states %s, want sfrcs", got)
			}
			// The hard bounce changes its row twice: accepted (sent), then failed.
			if res.Asked != 5 || res.Answered != 3 || res.NotFound != 1 || res.Pending != 1 || res.Settled != 5 {
				t.Errorf("result %+v", res)
			}
			// Asking again changes nothing: the settled claims left the
			// quarantine, the young one is still pending.
			if again := reconcile(t, db, p); again.Asked != 1 || again.Pending != 1 || again.Settled != 0 {
				t.Errorf("again: %+v", again)
			}
		})
	}
}

// Since lists what each provider accepted, for `scan recover --ask`.
func TestSinceListsWhatTheProviderAccepted(t *testing.T) {
	t.Parallel()
	msgs := map[string][]sent{
		"postmark": {{1, 1, time.Hour, []string{"Delivered"}}, {2, 2, 30 * time.Minute, nil}},
		"mailgun":  {{1, 1, time.Hour, []string{"accepted", "delivered"}}, {2, 2, 30 * time.Minute, []string{"accepted"}}},
		"sendgrid": {{1, 1, time.Hour, []string{"processed", "delivered"}}, {2, 2, 30 * time.Minute, []string{"processed"}}},
	}
	ps := map[string]func(string) (ask.Provider, error){
		"postmark": func(b string) (ask.Provider, error) { return postmark.NewAsker("server-token", fast(b)) },
		"mailgun":  func(b string) (ask.Provider, error) { return mailgun.NewAsker("key-1", "n.example.com", fast(b)) },
		"sendgrid": func(b string) (ask.Provider, error) { return sendgrid.NewAsker("SG.key", fast(b)) },
	}
	for name, m := range msgs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := ps[name](newStandIn(t, name, m).URL)
			if err != nil {
				t.Fatal(err)
			}
			accepted := map[string]int{}
			delivered := 0
			err = p.Since(context.Background(), now.Add(-2*time.Hour), func(s ledger.Settlement) error {
				switch s.Kind {
				case ledger.KindAccepted:
					accepted[s.Key] = s.Attempt
				case ledger.KindDelivered:
					delivered++
				}
				if s.To != ledger.Sent {
					t.Errorf("%s: %+v", name, s)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(accepted) != 2 || accepted[key(1)] != 1 || accepted[key(2)] != 2 || delivered != 1 {
				t.Errorf("accepted %v, delivered %d; want keys 1 (attempt 1) and 2 (attempt 2), one delivery", accepted, delivered)
			}
		})
	}
}

// Claims older than the provider's retention are Unknown without a
// request and do not take the limit's places: the newer claim behind
// them is still asked about.
func TestReconcileSkipsClaimsPastTheRetention(t *testing.T) {
	t.Parallel()
	db := setup(t, claim{3 * 24 * time.Hour}, claim{2 * 24 * time.Hour}, claim{2 * time.Hour})
	srv := newStandIn(t, "mailgun", []sent{{3, 1, 119 * time.Minute, []string{"delivered"}}})
	p, err := mailgun.NewAsker("key-1", "n.example.com", fast(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ask.Reconcile(context.Background(), db, p, ask.RunConfig{OlderThan: 15 * time.Minute, Limit: 1, Now: func() time.Time { return now }}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Unknown != 2 || res.Asked != 1 || res.Answered != 1 || res.Cut {
		t.Errorf("result %+v; want 2 unknown, 1 asked and answered", res)
	}
	if got := states(t, db, 3); got != "ccs" {
		t.Errorf("states %s, want ccs", got)
	}
}
