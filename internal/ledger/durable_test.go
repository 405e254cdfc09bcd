package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/pgtest"
)

// A claiming transaction commits with synchronous_commit at least on,
// whatever the session's default (here a connection whose default is off
// or local, as a role's or a database's setting would make it), and keeps
// a stronger remote_apply; the setting ends with the transaction.
func TestClaimTransactionsCommitSynchronously(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	if _, err := ledger.Migrate(context.Background(), pgtest.Open(t, dsn).DB); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dflt, want string }{
		{"off", "on"}, {"local", "on"}, {"remote_write", "on"}, {"on", "on"}, {"remote_apply", "remote_apply"},
	} {
		t.Run(tc.dflt, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.Open(t, dsn+" synchronous_commit="+tc.dflt)
			db.SetMaxOpenConns(1) // the same session inside and after
			setting := func(q sqlx.QueryerContext) string {
				var s string
				if err := sqlx.GetContext(ctx, q, &s, `SELECT current_setting('synchronous_commit')`); err != nil {
					t.Fatal(err)
				}
				return s
			}
			var inPool, inTx string
			if err := ledger.Durably(ctx, db, func(q sqlx.ExtContext) error { inPool = setting(q); return nil }); err != nil {
				t.Fatal(err)
			}
			if inPool != tc.want {
				t.Fatalf("default %s: a claim from the pool commits with %s, want %s", tc.dflt, inPool, tc.want)
			}
			if got := setting(db); got != tc.dflt {
				t.Fatalf("default %s: after the claim the session has %s: the setting leaked", tc.dflt, got)
			}
			tx := db.MustBeginTx(ctx, nil)
			defer tx.Rollback()
			if _, err := ledger.Insert(ctx, tx, opt("r"), []ledger.Claim{claim(1, 0)}); err != nil {
				t.Fatal(err)
			}
			if inTx = setting(tx); inTx != tc.want {
				t.Fatalf("default %s: a claim inside the caller's transaction commits with %s, want %s", tc.dflt, inTx, tc.want)
			}
		})
	}
}

// A fresh ledger refuses nothing; each pass then records where it found
// the database; a pass that finds another timeline than the last recorded
// (a promotion, a PITR), or a WAL position behind it, records nothing and
// refuses with the last pass it knows of, until an acknowledged epoch.
func TestCheckPassRefusesAnotherTimeline(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	here, err := ledger.CheckPass(ctx, db, "run-1", t0)
	if err != nil || here.Timeline < 1 || here.LSN == "" {
		t.Fatalf("fresh ledger: %+v, %v", here, err)
	}
	if _, err := ledger.CheckPass(ctx, db, "run-2", t0.Add(time.Hour)); err != nil {
		t.Fatalf("same timeline: %v", err)
	}
	// The last pass was recorded on a timeline other than the server's:
	// as after a promotion or a PITR to a point before that pass.
	db.MustExec(`UPDATE notice_ledger_epoch SET timeline = timeline + 1 WHERE run_id = 'run-2'`)
	// CheckNext (scan status) sees the same refusal and records nothing.
	if _, err := ledger.CheckNext(ctx, db); !errors.Is(err, ledger.ErrRestored) {
		t.Fatalf("check next on another timeline: %v", err)
	}
	if n := count(t, db, `SELECT count(*) FROM notice_ledger_epoch`); n != 2 {
		t.Fatalf("check next recorded an epoch: %d", n)
	}
	for range 2 { // and it stays refused
		_, err = ledger.CheckPass(ctx, db, "run-3", t0.Add(2*time.Hour))
		var re *ledger.RestoredError
		if !errors.Is(err, ledger.ErrRestored) || !errors.As(err, &re) || re.Last.RunID != "run-2" {
			t.Fatalf("another timeline: %v", err)
		}
		for _, want := range []string{"scan recover", "run-2", "--none-lost"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("the refusal does not name %q: %v", want, err)
			}
		}
	}
	if n := count(t, db, `SELECT count(*) FROM notice_ledger_epoch WHERE run_id = 'run-3'`); n != 0 {
		t.Fatalf("a refused pass recorded %d epochs", n)
	}
	e, err := ledger.Acknowledge(ctx, db, ledger.EpochNoneLost, "rec-1", "ops", "checked the provider", t0, t0.Add(3*time.Hour))
	if err != nil || e.Timeline == nil || *e.Timeline != here.Timeline || *e.RecordedBy != "ops" {
		t.Fatalf("acknowledge: %+v, %v", e, err)
	}
	if _, err := ledger.CheckPass(ctx, db, "run-4", t0.Add(4*time.Hour)); err != nil {
		t.Fatalf("after the acknowledgement: %v", err)
	}
	// Behind the last recorded WAL position on the same timeline.
	db.MustExec(`UPDATE notice_ledger_epoch SET lsn = lsn + 1000000000 WHERE run_id = 'run-4'`)
	if _, err := ledger.CheckPass(ctx, db, "run-5", t0.Add(5*time.Hour)); !errors.Is(err, ledger.ErrRestored) {
		t.Fatalf("behind the last position: %v", err)
	}
	last, err := ledger.LastEpoch(ctx, db)
	if err != nil || last.RunID != "run-4" {
		t.Fatalf("last epoch %+v, %v", last, err)
	}
}

func count(t *testing.T, db *sqlx.DB, q string) int {
	t.Helper()
	var n int
	if err := db.Get(&n, q); err != nil {
		t.Fatal(err)
	}
	return n
}
