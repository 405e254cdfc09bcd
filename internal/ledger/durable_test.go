package ledger_test

import (
	"context"
	"errors"
	"fmt"
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
// a stronger remote_apply; the setting ends with the transaction. The
// claim statements set it themselves (no statement of its own before
// them), also when they insert or re-claim nothing: read after each
// statement, in the transaction whose COMMIT reads it.
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
			if _, err := ledger.Insert(ctx, db, opt("r"), []ledger.Claim{claim(2, 0)}); err != nil {
				t.Fatal(err)
			}
			if got := setting(db); got != tc.dflt {
				t.Fatalf("default %s: after the claim the session has %s: the setting leaked", tc.dflt, got)
			}
			for _, step := range []struct {
				name  string
				claim func(tx *sqlx.Tx) error
			}{
				{"a claim", func(tx *sqlx.Tx) error {
					_, err := ledger.Insert(ctx, tx, opt("r"), []ledger.Claim{claim(1, 0)})
					return err
				}},
				{"a claim that inserts nothing", func(tx *sqlx.Tx) error {
					won, err := ledger.Insert(ctx, tx, opt("r"), []ledger.Claim{claim(2, 0)})
					if err == nil && len(won) != 0 {
						t.Fatalf("claim 2 inserted twice: %+v", won)
					}
					return err
				}},
				{"a re-claim that takes nothing", func(tx *sqlx.Tx) error {
					_, err := ledger.Reclaim(ctx, tx, opt("r"), []string{claim(2, 0).Key})
					return err
				}},
			} {
				tx := db.MustBeginTx(ctx, nil)
				t.Cleanup(func() { _ = tx.Rollback() }) // a Fatal below leaves the one connection free
				if got := setting(tx); got != tc.dflt {
					t.Fatalf("default %s: a transaction starts with %s", tc.dflt, got)
				}
				if err := step.claim(tx); err != nil {
					t.Fatal(err)
				}
				if got := setting(tx); got != tc.want {
					t.Fatalf("default %s: %s inside the caller's transaction commits with %s, want %s", tc.dflt, step.name, got, tc.want)
				}
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
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
	// CheckTimeline (scan status, the dry run) sees the same refusal and records nothing.
	if _, err := ledger.CheckTimeline(ctx, db); !errors.Is(err, ledger.ErrRestored) {
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

// A pass that finds a new timeline after an epoch whose witness says its
// pass claimed under a synchronous standby still refuses where it cannot
// read the new timeline's history: a role not granted EXECUTE on
// pg_read_file (here, a timeline with no history file at all) cannot tell a
// switchover from a failover. The refusal says why.
func TestCheckPassRefusesASwitchItCannotRead(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := ledger.CheckPass(ctx, db, "run-1", t0); err != nil {
		t.Fatal(err)
	}
	var w struct {
		SyncStandbys int    `db:"sync_standbys"`
		SyncCommit   string `db:"sync_commit"`
		SystemID     string `db:"system_id"`
	}
	if err := db.Get(&w, `SELECT sync_standbys, sync_commit, system_id FROM notice_ledger_epoch WHERE run_id = 'run-1'`); err != nil {
		t.Fatal(err)
	}
	if w.SyncStandbys != 0 || w.SyncCommit == "" || w.SystemID == "" {
		t.Fatalf("the epoch's witness on a server with no standby: %+v", w)
	}
	// As if run-1 had claimed on timeline 2 under a synchronous standby,
	// and the server were now on another timeline.
	db.MustExec(`UPDATE notice_ledger_epoch SET timeline = timeline + 1, sync_standbys = 1, sync_commit = 'on' WHERE run_id = 'run-1'`)
	_, err := ledger.CheckPass(ctx, db, "run-2", t0.Add(time.Hour))
	var re *ledger.RestoredError
	if !errors.As(err, &re) || !strings.Contains(re.Why, "history") || !strings.Contains(err.Error(), "not a lossless switchover") {
		t.Fatalf("a switch it cannot read: %v", err)
	}
	if n := count(t, db, `SELECT count(*) FROM notice_ledger_epoch WHERE run_id = 'run-2'`); n != 0 {
		t.Fatalf("a refused pass recorded %d epochs", n)
	}
}

// The grants docs/recovery-ha.md names: a role with its ledger tables and
// pg_monitor but not EXECUTE on pg_read_file cannot read a timeline's
// history (permission denied, so a switchover refuses); granted EXECUTE
// on pg_read_file(text), it reads under the data directory (here it gets
// as far as the missing file: the server has no history on timeline 1).
func TestCheckPassHistoryGrant(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	if _, err := ledger.CheckPass(ctx, db, "run-1", t0); err != nil {
		t.Fatal(err)
	}
	db.MustExec(`UPDATE notice_ledger_epoch SET timeline = timeline + 1, sync_standbys = 1, sync_commit = 'on' WHERE run_id = 'run-1'`)
	role := fmt.Sprintf("scan_witness_%d", time.Now().UnixNano())
	var schema string
	if err := db.Get(&schema, `SELECT current_schema()`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE ROLE ` + role + ` NOLOGIN`, `GRANT pg_monitor TO ` + role,
		`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		`GRANT SELECT, INSERT ON notice_ledger_epoch TO ` + role,
		`GRANT USAGE ON SEQUENCE notice_ledger_epoch_id_seq TO ` + role} {
		db.MustExec(q)
	}
	t.Cleanup(func() {
		_, _ = db.Exec(`DROP OWNED BY ` + role)
		_, _ = db.Exec(`DROP ROLE ` + role)
	})
	why := func() string {
		t.Helper()
		conn, err := db.Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, `SET ROLE `+role); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = conn.ExecContext(ctx, `RESET ROLE`) }()
		_, err = ledger.CheckPass(ctx, conn, "run-2", t0.Add(time.Hour))
		var re *ledger.RestoredError
		if !errors.As(err, &re) {
			t.Fatalf("as %s: %v, want a refusal", role, err)
		}
		return re.Why
	}
	if w := why(); !strings.Contains(w, "permission denied") || !strings.Contains(w, "pg_read_file") {
		t.Fatalf("without EXECUTE on pg_read_file: %q", w)
	}
	db.MustExec(`GRANT EXECUTE ON FUNCTION pg_read_file(text) TO ` + role)
	if w := why(); strings.Contains(w, "permission denied") || !strings.Contains(w, "00000001.history") {
		t.Fatalf("with EXECUTE on pg_read_file: %q", w)
	}
}
