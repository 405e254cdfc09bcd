package ledger_test

import (
	"context"
	"testing"

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
