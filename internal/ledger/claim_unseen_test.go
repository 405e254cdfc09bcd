package ledger_test

import (
	"context"
	"testing"
	"time"

	"scan/internal/ledger"
)

// A batch's claims go in by a plain insert (no ON CONFLICT confirmation
// record per row, issue 39) when none of them is in the ledger yet. A
// claim another session inserts after the batch's probe, and commits
// while the batch waits on it, makes the plain insert fail with
// unique_violation: the batch is claimed again with ON CONFLICT, and
// every notice ends with exactly one row, the other session's or the
// batch's.
func TestAClaimRacingAnotherSessionIsTakenOnce(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	// The month's partition first, so that the batch below waits on the
	// other session's row, not on its creating the month.
	if _, err := ledger.Insert(ctx, db, opt("earlier"), []ledger.Claim{claim(9, 0)}); err != nil {
		t.Fatal(err)
	}
	tx := db.MustBegin()
	defer tx.Rollback()
	if won, err := ledger.Insert(ctx, tx, opt("other"), []ledger.Claim{claim(1, 0)}); err != nil || len(won) != 1 {
		t.Fatalf("the other session's claim: %v, %v", won, err)
	}
	type result struct {
		won []ledger.Won
		err error
	}
	done := make(chan result, 1)
	go func() {
		won, err := ledger.Insert(ctx, db, opt("pass"), []ledger.Claim{claim(1, 0), claim(2, 0), claim(3, 0)})
		done <- result{won, err}
	}()
	// The batch's insert waits for the other session's row (a lock on its
	// transaction id) before it can tell whether it conflicts.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := db.Get(&waiting, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%notice_ledger%'`); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the batch finished before the other session committed: %v, %v", r.won, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch never waited for the other session's claim")
		}
		time.Sleep(5 * time.Millisecond) // polling the server's view of the wait, not timing it
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("the batch: %v", r.err)
	}
	if len(r.won) != 2 || r.won[0].Key == key(10) || r.won[1].Key == key(10) {
		t.Fatalf("the batch won %v, want the two claims the other session did not take", r.won)
	}
	var runs []string
	if err := db.Select(&runs, `SELECT run_id FROM notice_ledger ORDER BY notice_key`); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 || runs[0] != "other" || runs[1] != "pass" || runs[2] != "pass" || runs[3] != "earlier" {
		t.Fatalf("ledger rows by run: %v, want other, pass, pass, earlier", runs)
	}
}

// The same key twice in one batch: the plain insert refuses the second
// row, and the batch goes in with ON CONFLICT, once.
func TestABatchWithTheSameClaimTwiceTakesItOnce(t *testing.T) {
	t.Parallel()
	db := setup(t)
	won, err := ledger.Insert(context.Background(), db, opt("pass"), []ledger.Claim{claim(5, 0), claim(6, 0), claim(5, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(won) != 2 {
		t.Fatalf("won %v, want 2 claims", won)
	}
	if n := countRows(t, db, `SELECT count(*) FROM notice_ledger`); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
}

// A batch whose notices are partly in the ledger already (a re-run's
// page, or a batch retried after its commit's reply was lost) takes the
// plain insert's path without an error: the rows already there, by key or
// by business tuple under another key (a rotated secret), are left out.
func TestABatchPartlyClaimedBeforeTakesOnlyTheRest(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := ledger.Insert(ctx, db, opt("first"), []ledger.Claim{claim(1, 0), claim(2, 0)}); err != nil {
		t.Fatal(err)
	}
	rotated := claim(2, 0)
	rotated.Key = key(777) // the same business tuple under another secret's key
	won, err := ledger.Insert(ctx, db, opt("second"), []ledger.Claim{claim(1, 0), rotated, claim(3, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(won) != 1 || won[0].Key != key(30) {
		t.Fatalf("won %v, want only %s", won, key(30))
	}
	if n := countRows(t, db, `SELECT count(*) FROM notice_ledger`); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}
}
