package status_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/pgtest"
	"scan/internal/status"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

func setup(t *testing.T) *sqlx.DB {
	t.Helper()
	db := pgtest.New(t)
	if _, err := ledger.Migrate(context.Background(), db.DB); err != nil {
		t.Fatal(err)
	}
	return db
}

func claimOf(sub int, channel string) ledger.Claim {
	key := fmt.Sprintf("%032x%032x", sub, sub)
	if channel == "sms" {
		key = fmt.Sprintf("%032x%032x", sub+1000, sub+1000)
	}
	return ledger.Claim{Key: key, Tuple: notice.Tuple{SubscriptionID: fmt.Sprintf("sub_%d", sub), Kind: "renewal_notice_t72",
		PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}, RenewsAt: t0.Add(72 * time.Hour),
		WindowClosesAt: t0.Add(24 * time.Hour), Domain: "example.com", MessageID: key[:32] + "@n.example.com"}
}

// claim claims subs on channel at at (run runID), then records outcome
// for each at at+1m unless it is Claimed.
func claim(t *testing.T, db *sqlx.DB, runID, channel string, at time.Time, outcome ledger.State, subs ...int) {
	t.Helper()
	ctx := context.Background()
	cs := make([]ledger.Claim, len(subs))
	outs := make([]ledger.Outcome, len(subs))
	for i, s := range subs {
		cs[i] = claimOf(s, channel)
		outs[i] = ledger.Outcome{Key: cs[i].Key, State: outcome, SentAt: at.Add(time.Minute), Error: "test"}
	}
	if won, err := ledger.Insert(ctx, db, ledger.ClaimOptions{State: ledger.Claimed, Now: at, RunID: runID, Channel: channel}, cs); err != nil || len(won) != len(cs) {
		t.Fatalf("claim %v: won %d, %v", subs, len(won), err)
	}
	if outcome == ledger.Claimed {
		return
	}
	if n, err := ledger.RecordOutcomes(ctx, db, runID, at.Add(time.Minute), outs); err != nil || n != int64(len(outs)) {
		t.Fatalf("outcomes %v: %d, %v", subs, n, err)
	}
}

func report(t *testing.T, db *sqlx.DB, now time.Time) status.Status {
	t.Helper()
	s, err := status.Report(context.Background(), db, now, status.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCleanLedgerNeedsNobody(t *testing.T) {
	t.Parallel()
	db := setup(t)
	s := report(t, db, t0)
	if len(s.Problems) != 0 || s.Quarantine.Count != 0 || s.Quarantine.OldestClaimedAt != nil || s.Retry.Count != 0 ||
		s.Missed24h != 0 || s.Undelivered24h != 0 || s.RecoveryNeeded || !s.TimelineChecked || len(s.LastPass) != 0 {
		t.Fatalf("clean ledger: %+v", s)
	}
	var b strings.Builder
	if err := status.WriteTable(&b, s); err != nil || !strings.Contains(b.String(), "all is well") {
		t.Fatalf("table: %v\n%s", err, b.String())
	}
}

// The counts of each part, on a ledger that has one of each, and the
// boundaries: a claim is in quarantine from 15m, needs a person from 1h;
// a notice failed by email but sent by sms is not undelivered; a failure
// older than 24h is not counted.
func TestCountsAndTheirBoundaries(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	now := t0.Add(2 * time.Hour)
	claim(t, db, "r1", "email", t0, ledger.Sent, 1)
	claim(t, db, "r1", "email", t0, ledger.Retry, 2)
	claim(t, db, "r1", "email", t0, ledger.Failed, 3)
	claim(t, db, "r1", "email", t0, ledger.Failed, 6)
	claim(t, db, "r1", "sms", t0, ledger.Sent, 6)
	claim(t, db, "r0", "email", t0.Add(-48*time.Hour), ledger.Failed, 7)
	claim(t, db, "r2", "email", now.Add(-50*time.Minute), ledger.Claimed, 8) // in quarantine, not yet a person's
	claim(t, db, "r3", "email", now.Add(-10*time.Minute), ledger.Claimed, 9) // in flight
	if _, err := ledger.RecordMissed(ctx, db, t0.Add(time.Hour), "r1", []ledger.Claim{claimOf(5, "email")}); err != nil {
		t.Fatal(err)
	}
	s := report(t, db, now)
	if s.Quarantine.Count != 1 || s.Quarantine.Oldest.SubscriptionID != "sub_8" || s.Retry.Count != 1 ||
		s.Retry.OldestClaimedAt == nil || !s.Retry.OldestClaimedAt.Equal(t0) || s.Missed24h != 1 || s.Undelivered24h != 2 {
		t.Fatalf("status: %+v %+v", s, s.Quarantine)
	}
	if len(s.Problems) != 0 {
		t.Fatalf("a 50m quarantine needs a person: %q", s.Problems)
	}
	s = report(t, db, now.Add(10*time.Minute))
	if len(s.Problems) != 1 || !strings.Contains(s.Problems[0], claimOf(8, "email").Key) || !strings.Contains(s.Problems[0], "sub_8") {
		t.Fatalf("a 1h quarantine: %q", s.Problems)
	}
	if s.Quarantine.Count != 2 || !s.Quarantine.OldestClaimedAt.Equal(now.Add(-50*time.Minute)) {
		t.Fatalf("quarantine at +10m: %+v", s.Quarantine)
	}
}

// The last pass of each shard: a pass that ended with an error, or that
// has no end long after its start, needs a person; one still running
// does not.
func TestLastPassOfEachShard(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ledger.PassStarted(ctx, db, "r-a", 0, 2, t0))
	must(ledger.PassEnded(ctx, db, "r-a", "", map[string]int{"sent": 4}, t0.Add(time.Minute)))
	must(ledger.PassStarted(ctx, db, "r-b", 0, 2, t0.Add(time.Hour)))
	must(ledger.PassEnded(ctx, db, "r-b", "send: connection refused", map[string]int{"sent": 1, "retry": 2}, t0.Add(61*time.Minute)))
	must(ledger.PassStarted(ctx, db, "r-c", 1, 2, t0.Add(90*time.Minute)))
	must(ledger.PassStarted(ctx, db, "r-d", 1, 2, t0.Add(30*time.Minute)))
	must(ledger.PassEnded(ctx, db, "r-d", "", map[string]int{"sent": 9}, t0.Add(31*time.Minute)))
	s := report(t, db, t0.Add(2*time.Hour))
	if len(s.LastPass) != 2 || s.LastPass[0].RunID != "r-b" || !s.LastPass[0].Failed || s.LastPass[0].Summary["retry"] != 2 ||
		s.LastPass[1].RunID != "r-c" || !s.LastPass[1].Running || s.LastPass[1].Failed {
		t.Fatalf("last passes: %+v", s.LastPass)
	}
	if len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "r-b") || !strings.Contains(s.Problems[0], "connection refused") {
		t.Fatalf("problems: %q", s.Problems)
	}
	s = report(t, db, t0.Add(5*time.Hour))
	if len(s.Problems) != 2 || !strings.Contains(s.Problems[1], "r-c") || s.LastPass[1].Running {
		t.Fatalf("a pass with no end 3h30 after its start: %q", s.Problems)
	}
}

// A database that went back in time (its last pass recorded on another
// timeline, as a promotion leaves it): recovery needed, with the
// command, and status itself records no epoch.
func TestRecoveryNeededAfterARestore(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := ledger.CheckPass(ctx, db, "r1", t0); err != nil {
		t.Fatal(err)
	}
	if s := report(t, db, t0.Add(time.Hour)); s.RecoveryNeeded || len(s.Problems) != 0 {
		t.Fatalf("same timeline: %+v", s)
	}
	db.MustExec(`UPDATE notice_ledger_epoch SET timeline = timeline + 1`)
	s := report(t, db, t0.Add(time.Hour))
	if !s.RecoveryNeeded || s.Recovery == nil || s.Recovery.Command != "scan recover --since "+t0.Format(time.RFC3339)+" --ask PROVIDER" ||
		len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "scan recover --since") {
		t.Fatalf("restored: %+v %+v", s, s.Recovery)
	}
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM notice_ledger_epoch`); err != nil || n != 1 {
		t.Fatalf("status recorded an epoch: %d, %v", n, err)
	}
}

// The receiver's last commit per provider: the latest time wins whatever
// the order the replicas write in, and every request's events count.
func TestReceiverLastCommitPerProvider(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	for _, r := range []struct {
		p  string
		n  int
		at time.Time
	}{{"mailgun", 3, t0.Add(10 * time.Minute)}, {"mailgun", 2, t0.Add(5 * time.Minute)}, {"twilio", 1, t0}} {
		if err := ledger.ReceiptRecord(ctx, db, r.p, r.n, r.at); err != nil {
			t.Fatal(err)
		}
	}
	s := report(t, db, t0.Add(time.Hour))
	if len(s.Receiver) != 2 || s.Receiver[0].Provider != "mailgun" || !s.Receiver[0].CommittedAt.Equal(t0.Add(10*time.Minute)) ||
		s.Receiver[0].Events != 5 || s.Receiver[1].Provider != "twilio" {
		t.Fatalf("receiver: %+v", s.Receiver)
	}
}

// The JSON names the contract gives.
func TestJSONFieldNames(t *testing.T) {
	t.Parallel()
	db := setup(t)
	claim(t, db, "r2", "email", t0, ledger.Claimed, 1)
	b, err := json.Marshal(report(t, db, t0.Add(2*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"last_pass", "quarantine", "retry", "missed_24h", "undelivered_24h", "recovery_needed", "receiver", "problems"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("no %q in %s", k, b)
		}
	}
	q := m["quarantine"].(map[string]any)
	if q["count"] != 1.0 || q["oldest_claimed_at"] != t0.Format(time.RFC3339) || m["retry"].(map[string]any)["count"] != 0.0 {
		t.Fatalf("quarantine: %s", b)
	}
}
