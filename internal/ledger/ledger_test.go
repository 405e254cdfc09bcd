package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/notice"
	"scan/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

func setup(t testing.TB) *sqlx.DB {
	t.Helper()
	db := pgtest.New(t)
	if _, err := ledger.Migrate(context.Background(), db.DB); err != nil {
		t.Fatal(err)
	}
	return db
}

func key(i int) string { return fmt.Sprintf("%032x%032x", i, i) }

func claim(i, rev int) ledger.Claim {
	return ledger.Claim{
		Key: key(i*10 + rev), Tuple: notice.Tuple{SubscriptionID: fmt.Sprintf("sub_%d", i), Kind: "renewal_notice_t72",
			PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Revision: rev},
		RenewsAt: t0.Add(48 * time.Hour), WindowClosesAt: t0.Add(24 * time.Hour),
		Domain: "example.com", MessageID: key(i*10 + rev)[:32] + "@n.example.com", CancelToken: fmt.Sprintf("tok%d", i),
	}
}

func opt(run string) ledger.ClaimOptions {
	return ledger.ClaimOptions{State: ledger.Claimed, Now: t0, RunID: run}
}

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ledger.Migrate(context.Background(), db.DB)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, err := ledger.Migrate(context.Background(), db.DB); err != nil || n != 0 {
		t.Fatalf("second migrate applied %d, %v", n, err)
	}
}

func TestClaimIsDecidedByTheUniqueIndexes(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	won, err := ledger.Insert(ctx, db, opt("a"), []ledger.Claim{claim(1, 0), claim(2, 0)})
	if err != nil || len(won) != 2 {
		t.Fatalf("first claim won %d, %v", len(won), err)
	}
	// The same keys again: a normal result with nothing in it.
	won, err = ledger.Insert(ctx, db, opt("b"), []ledger.Claim{claim(1, 0), claim(2, 0), claim(3, 0)})
	if err != nil || len(won) != 1 || won[0].Key != key(30) {
		t.Fatalf("second claim = %+v, %v", won, err)
	}
	// A rotated secret gives a different key for the same business tuple:
	// the second unique index still refuses it.
	rotated := claim(1, 0)
	rotated.Key = key(999)
	won, err = ledger.Insert(ctx, db, opt("c"), []ledger.Claim{rotated})
	if err != nil || len(won) != 0 {
		t.Fatalf("rotated-key claim won %d, %v", len(won), err)
	}
}

func TestConcurrentClaimsEachKeyOnce(t *testing.T) {
	t.Parallel()
	db := setup(t)
	var claims []ledger.Claim
	for i := range 500 {
		claims = append(claims, claim(i, 0))
	}
	var mu sync.Mutex
	total := map[string]int{}
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, err := ledger.Insert(context.Background(), db, opt(fmt.Sprint("run", p)), claims)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for _, w := range won {
				total[w.Key]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(total) != 500 {
		t.Fatalf("claimed %d distinct keys, want 500", len(total))
	}
	for k, n := range total {
		if n != 1 {
			t.Fatalf("key %s claimed %d times", k[:12], n)
		}
	}
}

func TestRevisionReusesTokenAndPointsBack(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := ledger.Insert(ctx, db, opt("a"), []ledger.Claim{claim(1, 0)}); err != nil {
		t.Fatal(err)
	}
	c1 := claim(1, 1)
	c1.CancelToken = "a-new-token"
	won, err := ledger.Insert(ctx, db, opt("b"), []ledger.Claim{c1})
	if err != nil || len(won) != 1 {
		t.Fatalf("won %v, %v", won, err)
	}
	if won[0].CancelToken != "tok1" {
		t.Fatalf("revision 1 token = %q, want the stored tok1", won[0].CancelToken)
	}
	r, err := ledger.Get(ctx, db, c1.Key)
	if err != nil || r.Supersedes == nil || *r.Supersedes != claim(1, 0).Key {
		t.Fatalf("supersedes = %v, %v", r.Supersedes, err)
	}
}

func TestOutcomesAndRetryCAS(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := ledger.Insert(ctx, db, opt("a"), []ledger.Claim{claim(1, 0), claim(2, 0), claim(3, 0), claim(4, 0)}); err != nil {
		t.Fatal(err)
	}
	n, err := ledger.RecordOutcomes(ctx, db, "a", t0, []ledger.Outcome{
		{Key: key(10), State: ledger.Sent, SentAt: t0, ProviderID: "p1", Attempts: 1, Sender: "smtp"},
		{Key: key(20), State: ledger.Retry, Attempts: 3, Error: "transient (451)", Sender: "ses"},
		{Key: key(30), State: ledger.Failed, Attempts: 1, Error: "permanent (550)"},
		{Key: key(40), State: ledger.Claimed, Attempts: 1, Error: "unknown: timeout"},
	})
	if err != nil || n != 4 {
		t.Fatalf("recorded %d, %v", n, err)
	}
	// Another run cannot overwrite these outcomes.
	if n, _ := ledger.RecordOutcomes(ctx, db, "b", t0, []ledger.Outcome{{Key: key(40), State: ledger.Sent}}); n != 0 {
		t.Fatalf("run b overwrote run a's claim")
	}
	counts, _ := ledgertest.CountByState(ctx, db)
	if counts[ledger.Sent] != 1 || counts[ledger.Retry] != 1 || counts[ledger.Failed] != 1 || counts[ledger.Claimed] != 1 {
		t.Fatalf("counts = %v", counts)
	}
	// Each outcome carries the sender of its attempt; none, none.
	for k, want := range map[string]string{key(10): "smtp", key(20): "ses", key(30): ""} {
		r, err := ledger.Get(ctx, db, k)
		if err != nil {
			t.Fatal(err)
		}
		if got := deref(r.Sender); got != want {
			t.Errorf("%s: sender %q, want %q", k, got, want)
		}
	}
	// Two passes race for the retry row: exactly one wins.
	var wins int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, err := ledger.Reclaim(ctx, db, opt(fmt.Sprint("r", p)), []string{key(20), key(10)})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			wins += len(won)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("retry re-claimed %d times, want 1", wins)
	}
	// The new attempt has reached no sender yet.
	if r, err := ledger.Get(ctx, db, key(20)); err != nil || r.Sender != nil {
		t.Fatalf("re-claimed row keeps sender %q (%v)", deref(r.Sender), err)
	}
	// Quarantine lists the unknown outcome only.
	q, err := ledger.Quarantine(ctx, db, t0.Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range q {
		found = found || r.NoticeKey == key(40)
	}
	if !found {
		t.Fatalf("quarantine %v lacks the unknown outcome", q)
	}
}

func TestExpireRetries(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	_, _ = ledger.Insert(ctx, db, opt("a"), []ledger.Claim{claim(1, 0)})
	_, _ = ledger.RecordOutcomes(ctx, db, "a", t0, []ledger.Outcome{{Key: key(10), State: ledger.Retry, Attempts: 1, Error: "451"}})
	if n, _ := ledger.ExpireRetries(ctx, db, t0.Add(23*time.Hour)); n != 0 {
		t.Fatal("expired before the window closed")
	}
	if n, _ := ledger.ExpireRetries(ctx, db, t0.Add(24*time.Hour)); n != 1 {
		t.Fatal("not expired at close")
	}
	r, _ := ledger.Get(ctx, db, key(10))
	if r.State != ledger.Missed {
		t.Fatalf("state = %s", r.State)
	}
}

func TestResolveAndSettle(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	_, _ = ledger.Insert(ctx, db, opt("a"), []ledger.Claim{claim(1, 0), claim(2, 0)})
	from, err := ledger.ResolveKey(ctx, db, ledger.Decision{Key: key(10), To: ledger.Retry, From: []ledger.State{ledger.Claimed}, By: "alice", Reason: "provider says no", At: t0})
	if err != nil || from != ledger.Claimed {
		t.Fatalf("resolve = %s, %v", from, err)
	}
	if _, err := ledger.ResolveKey(ctx, db, ledger.Decision{Key: key(10), To: ledger.Retry, From: []ledger.State{ledger.Claimed}, By: "bob", Reason: "again", At: t0}); !errors.Is(err, ledger.ErrStateChanged) {
		t.Fatalf("second resolve err = %v", err)
	}
	if _, err := ledger.ResolveKey(ctx, db, ledger.Decision{Key: key(77), To: ledger.Sent, From: []ledger.State{ledger.Claimed}, By: "bob", Reason: "x", At: t0}); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown key err = %v", err)
	}
	res, err := settle(ctx, db, "reconcile", t0, []ledger.Settlement{
		{MessageID: key(20)[:32] + "@n.example.com", To: ledger.Sent, Event: "delivered"},
		{MessageID: "nope@n.example.com", To: ledger.Sent, Event: "delivered"},
		{MessageID: key(20)[:32] + "@n.example.com", To: ledger.Retry, Event: "dropped"},
	})
	if err != nil || len(res.Changed) != 1 || res.Unknown != 1 || res.Unchanged != 1 {
		t.Fatalf("settle = %+v, %v", res, err)
	}
	var audit int
	if err := db.Get(&audit, `SELECT count(*) FROM notice_ledger_resolution`); err != nil || audit != 2 {
		t.Fatalf("audit rows = %d, %v", audit, err)
	}
}

// A settlement finds its row by notice key first, then by provider id
// (never one that several rows share), then by Message-ID; a permanent
// bounce makes the claim failed; rows that are not claimed do not change.
func TestSettleMatchesKeyProviderIDMessageID(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	var cs []ledger.Claim
	for i := 1; i <= 7; i++ {
		cs = append(cs, claim(i, 0))
	}
	if _, err := ledger.Insert(ctx, db, opt("a"), cs); err != nil {
		t.Fatal(err)
	}
	// Two rows carry provider ids although still claimed (as an operator
	// or an earlier tool could leave them); 60 and 70 share one.
	if _, err := db.Exec(`UPDATE notice_ledger SET provider_id = CASE notice_key WHEN $1 THEN 'ses-40' ELSE 'shared' END
		WHERE notice_key IN ($1, $2, $3)`, key(40), key(60), key(70)); err != nil {
		t.Fatal(err)
	}
	msgID := func(i int) string { return key(i)[:32] + "@n.example.com" }
	res, err := settle(ctx, db, "reconcile", t0, []ledger.Settlement{
		// The key wins over a Message-ID that names another row.
		{Key: key(10), MessageID: msgID(20), To: ledger.Sent, Event: "ses:delivery"},
		{Key: key(30), To: ledger.Failed, Event: "ses:bounce/permanent"},
		{ProviderID: "ses-40", To: ledger.Retry, Event: "ses:reject"},
		{Key: "f" + key(50)[1:], ProviderID: "nope", MessageID: msgID(50), To: ledger.Sent, Event: "postmark:delivery"},
		{ProviderID: "shared", To: ledger.Sent, Event: "sendgrid:delivered"},                       // ambiguous: unknown
		{ProviderID: "shared", MessageID: msgID(70), To: ledger.Sent, Event: "sendgrid:delivered"}, // falls to Message-ID
		{Key: key(10), To: ledger.Failed, Event: "ses:bounce/permanent"},                           // too late
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changed) != 5 || res.Unknown != 1 || res.Unchanged != 1 {
		t.Fatalf("settle = %+v", res)
	}
	want := map[int]ledger.State{10: ledger.Sent, 20: ledger.Claimed, 30: ledger.Failed, 40: ledger.Retry, 50: ledger.Sent, 60: ledger.Claimed, 70: ledger.Sent}
	for k, st := range want {
		r, err := ledger.Get(ctx, db, key(k))
		if err != nil || r.State != st {
			t.Errorf("%d: %s, %v; want %s", k, r.State, err, st)
		}
		if st == ledger.Failed && r.SentAt != nil {
			t.Errorf("%d: failed with sent_at %v", k, r.SentAt)
		}
	}
	if res.Changed[0].MessageID != msgID(10) || res.Changed[0].Key != key(10) {
		t.Errorf("change = %+v", res.Changed[0])
	}
}

// A provider id names a claim only while it is in quarantine: once the
// outcome is recorded (the only time a pass stores one), the row is found
// by its key or Message-ID, and an event with the provider id alone is
// unknown. No index on every sent row's provider id pays for that.
func TestProviderIDNamesOnlyClaimsInQuarantine(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := ledger.Insert(ctx, db, opt("a"), []ledger.Claim{claim(1, 0), claim(2, 0)}); err != nil {
		t.Fatal(err)
	}
	if n, err := ledger.RecordOutcomes(ctx, db, "a", t0, []ledger.Outcome{
		{Key: key(10), PeriodStart: claim(1, 0).PeriodStart, State: ledger.Sent, SentAt: t0, ProviderID: "ses-sent", Attempts: 1},
	}); err != nil || n != 1 {
		t.Fatalf("record: %d, %v", n, err)
	}
	if _, err := db.Exec(`UPDATE notice_ledger SET provider_id = 'ses-claimed' WHERE notice_key = $1`, key(20)); err != nil {
		t.Fatal(err)
	}
	res, err := settle(ctx, db, "reconcile", t0, []ledger.Settlement{
		{ProviderID: "ses-sent", To: ledger.Failed, Event: "ses:bounce/permanent"},
		{ProviderID: "ses-claimed", To: ledger.Sent, Event: "ses:delivery"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changed) != 1 || res.Changed[0].Key != key(20) || res.Unknown != 1 || res.Unchanged != 0 {
		t.Fatalf("settle = %+v", res)
	}
	// With its key, the same event finds the settled row and leaves it.
	res, err = settle(ctx, db, "reconcile", t0, []ledger.Settlement{
		{Key: key(10), ProviderID: "ses-sent", To: ledger.Failed, Event: "ses:bounce/permanent"},
	})
	if err != nil || len(res.Changed) != 0 || res.Unknown != 0 || res.Unchanged != 1 {
		t.Fatalf("settle by key = %+v, %v", res, err)
	}
	if r, err := ledger.Get(ctx, db, key(10)); err != nil || r.State != ledger.Sent {
		t.Fatalf("the sent row: %s, %v", r.State, err)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
