package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/notice"
)

// settle applies ss in a transaction of its own, as reconcile.Apply does
// with each batch.
func settle(ctx context.Context, db *sqlx.DB, by string, now time.Time, ss []ledger.Settlement) (res ledger.SettleResult, err error) {
	err = ledger.WithTx(ctx, db, func(tx *sqlx.Tx) error {
		var err error
		res, err = ledger.Settle(ctx, tx, by, now, ss)
		return err
	})
	return res, err
}

// The decision matrix of `scan resolve`: what each ruling sets, and from
// which states.
func TestNewDecision(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		r    ledger.Ruling
		to   ledger.State
		from []ledger.State
	}{
		{ledger.RulingSent, ledger.Sent, []ledger.State{ledger.Claimed, ledger.Retry, ledger.Failed}},
		{ledger.RulingNotSent, ledger.Retry, []ledger.State{ledger.Claimed}},
		{ledger.RulingRetry, ledger.Retry, []ledger.State{ledger.Claimed, ledger.Failed}},
	} {
		d, err := ledger.NewDecision(c.r, key(1), "alice", "why", t0)
		if err != nil {
			t.Fatalf("%s: %v", c.r, err)
		}
		if d.To != c.to || !slices.Equal(d.From, c.from) || d.Key != key(1) || d.By != "alice" || d.Reason != "why" || !d.At.Equal(t0) {
			t.Errorf("%s = %+v, want to %s from %v", c.r, d, c.to, c.from)
		}
	}
	for name, c := range map[string]struct {
		r          ledger.Ruling
		by, reason string
	}{
		"unknown ruling": {"maybe", "alice", "why"},
		"empty ruling":   {"", "alice", "why"},
		"no author":      {ledger.RulingSent, "", "why"},
		"blank reason":   {ledger.RulingRetry, "alice", " \t"},
	} {
		if d, err := ledger.NewDecision(c.r, key(1), c.by, c.reason, t0); !errors.Is(err, ledger.ErrInvalidDecision) {
			t.Errorf("%s: %+v, %v; want ErrInvalidDecision", name, d, err)
		}
	}
}

// Each ruling against a row in each of the five states: allowed moves
// change the row and write one audit row; the rest are refused with
// ErrStateChanged and change nothing.
func TestResolveMatrixOnTheLedger(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	states := []ledger.State{ledger.Claimed, ledger.Sent, ledger.Retry, ledger.Failed, ledger.Missed}
	rulings := []ledger.Ruling{ledger.RulingSent, ledger.RulingNotSent, ledger.RulingRetry}
	// The contract's table: sent and missed are final; failed leaves only
	// by --retry (or --sent, on evidence).
	moves := map[ledger.Ruling]string{ledger.RulingSent: "claimed retry failed", ledger.RulingNotSent: "claimed", ledger.RulingRetry: "claimed failed"}
	var cs []ledger.Claim
	for i := range len(states) * len(rulings) {
		cs = append(cs, claim(i+1, 0))
	}
	if won, err := ledger.Insert(ctx, db, opt("a"), cs); err != nil || len(won) != len(cs) {
		t.Fatalf("claim: %d, %v", len(won), err)
	}
	audit := 0
	for ri, r := range rulings {
		for si, st := range states {
			c := cs[ri*len(states)+si]
			if _, err := db.Exec(`UPDATE notice_ledger SET state = $2 WHERE notice_key = $1`, c.Key, st); err != nil {
				t.Fatal(err)
			}
			d, err := ledger.NewDecision(r, c.Key, "alice", "matrix", t0)
			if err != nil {
				t.Fatal(err)
			}
			allowed := slices.Contains(strings.Fields(moves[r]), string(st))
			from, err := ledger.ResolveKey(ctx, db, d)
			got, gerr := ledger.Get(ctx, db, c.Key)
			if gerr != nil {
				t.Fatal(gerr)
			}
			switch {
			case allowed && (err != nil || from != st || got.State != d.To):
				t.Errorf("%s from %s: from %s, %v, now %s; want %s", r, st, from, err, got.State, d.To)
			case !allowed && (!errors.Is(err, ledger.ErrStateChanged) || got.State != st):
				t.Errorf("%s from %s: %v, now %s; want refused", r, st, err, got.State)
			}
			if allowed {
				audit++
			}
			if d.To == ledger.Sent && allowed && got.SentAt == nil {
				t.Errorf("%s from %s: no sent_at", r, st)
			}
		}
	}
	if n := countRows(t, db, `SELECT count(*) FROM notice_ledger_resolution WHERE resolved_by = 'alice' AND reason = 'matrix'`); n != audit {
		t.Fatalf("audit rows = %d, want %d", n, audit)
	}
	if _, err := ledger.ResolveKey(ctx, db, ledger.Decision{Key: key(999), To: ledger.Sent, From: []ledger.State{ledger.Claimed}, By: "a", Reason: "r", At: t0}); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
}

// Resolve, Settle and Backfill write in the caller's transaction: a
// rollback leaves neither the change nor its audit row. (They take a
// *sqlx.Tx, so a call on the pool does not compile.)
func TestCallerOwnsTheTransaction(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := ledger.Insert(ctx, db, opt("a"), []ledger.Claim{claim(1, 0), claim(2, 0)}); err != nil {
		t.Fatal(err)
	}
	d, _ := ledger.NewDecision(ledger.RulingNotSent, key(10), "alice", "rolled back", t0)
	bf := ledger.Backfilled{Key: key(30), Tuple: notice.Tuple{SubscriptionID: "sub_3", Kind: "renewal_notice_t72",
		PeriodStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}, SentAt: t0, MessageID: key(30)[:32] + "@n.example.com"}
	rolledBack := errors.New("roll back")
	err := ledger.WithTx(ctx, db, func(tx *sqlx.Tx) error {
		if from, err := ledger.Resolve(ctx, tx, d); err != nil || from != ledger.Claimed {
			t.Errorf("resolve: %s, %v", from, err)
		}
		res, err := ledger.Settle(ctx, tx, "reconcile", t0, []ledger.Settlement{{Key: key(20), To: ledger.Sent, Event: "delivered"}})
		if err != nil || len(res.Changed) != 1 {
			t.Errorf("settle: %+v, %v", res, err)
		}
		if n, err := ledger.Backfill(ctx, tx, "backfill-x", []ledger.Backfilled{bf}); err != nil || n != 1 {
			t.Errorf("backfill: %d, %v", n, err)
		}
		// Inside the transaction all three are visible.
		if n := countTx(t, tx, `SELECT count(*) FROM notice_ledger_resolution`); n != 2 {
			t.Errorf("audit rows inside the transaction = %d, want 2", n)
		}
		return rolledBack
	})
	if !errors.Is(err, rolledBack) {
		t.Fatal(err)
	}
	if c, _ := ledgertest.CountByState(ctx, db); c[ledger.Claimed] != 2 || len(c) != 1 {
		t.Fatalf("after the rollback the ledger is %v, want the 2 claims only", c)
	}
	if n := countRows(t, db, `SELECT count(*) FROM notice_ledger_resolution`); n != 0 {
		t.Fatalf("audit rows after the rollback = %d", n)
	}
}

func countTx(t *testing.T, tx *sqlx.Tx, query string) int {
	t.Helper()
	var n int
	if err := tx.Get(&n, query); err != nil {
		t.Fatal(err)
	}
	return n
}

// ResolveRun decides for every claim of one run still without an
// outcome, oldest first, each in its own transaction with its own audit
// row; it leaves other runs and settled rows alone, skips a claim settled
// while it works, and says when the run has nothing left.
func TestResolveRun(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := ledger.Insert(ctx, db, opt("crashed"), []ledger.Claim{claim(1, 0), claim(2, 0), claim(3, 0), claim(4, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Insert(ctx, db, opt("other"), []ledger.Claim{claim(5, 0)}); err != nil {
		t.Fatal(err)
	}
	// Reconcile settled one already.
	if res, err := settle(ctx, db, "reconcile", t0, []ledger.Settlement{{Key: key(10), To: ledger.Sent, Event: "delivered"}}); err != nil || len(res.Changed) != 1 {
		t.Fatalf("settle: %+v, %v", res, err)
	}
	// A ruling that would also take retry rows: the run takes claimed only.
	d, err := ledger.NewDecision(ledger.RulingSent, "", "carol", "seen in the dashboard", t0)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	n, err := ledger.ResolveRun(ctx, db, "crashed", d, func(k string, from ledger.State) error {
		if from != ledger.Claimed {
			t.Errorf("%s from %s", k[:12], from)
		}
		seen = append(seen, k)
		if len(seen) == 1 {
			// A pass records key(40)'s outcome while the run is decided.
			if _, err := db.Exec(`UPDATE notice_ledger SET state = 'retry' WHERE notice_key = $1`, key(40)); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Fatalf("resolve run: %d, %v; want 2", n, err)
	}
	if want := []string{key(20), key(30)}; !slices.Equal(seen, want) {
		t.Fatalf("changed %v, want %v", seen, want)
	}
	want := map[int]ledger.State{10: ledger.Sent, 20: ledger.Sent, 30: ledger.Sent, 40: ledger.Retry, 50: ledger.Claimed}
	for k, st := range want {
		if r, err := ledger.Get(ctx, db, key(k)); err != nil || r.State != st {
			t.Errorf("%d: %s, %v; want %s", k, r.State, err, st)
		}
	}
	if n := countRows(t, db, `SELECT count(*) FROM notice_ledger_resolution WHERE resolved_by = 'carol'`); n != 2 {
		t.Fatalf("audit rows = %d, want 2", n)
	}
	if n, err := ledger.ResolveRun(ctx, db, "crashed", d, nil); !errors.Is(err, ledger.ErrNoClaims) || n != 0 {
		t.Fatalf("second resolve run: %d, %v; want ErrNoClaims", n, err)
	}

	// An error from the callback stops the run after that claim's commit.
	if _, err := ledger.Insert(ctx, db, opt("third"), []ledger.Claim{claim(6, 0), claim(7, 0)}); err != nil {
		t.Fatal(err)
	}
	stop := fmt.Errorf("stdout closed")
	if n, err := ledger.ResolveRun(ctx, db, "third", d, func(string, ledger.State) error { return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("resolve run with a failing callback: %d, %v", n, err)
	}
	if c, _ := ledgertest.CountByState(ctx, db); c[ledger.Claimed] != 2 {
		t.Fatalf("after the stopped run the ledger is %v, want key(50) and one of run third still claimed", c)
	}
}
