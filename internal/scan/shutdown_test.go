package scan_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/scan"
)

// After SIGTERM (Run's context cancelled right after a claim committed),
// the pass records the outcomes of what it claimed through a slow
// database, and gives up within its ShutdownGrace when the database does
// not answer at all (a lock held on the ledger), leaving those claims in
// quarantine: never released without a recorded outcome.
func TestShutdownWithALockedLedger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		release bool // let the recorder through once it waits on the lock
		grace   time.Duration
		want    ledger.State
	}{
		{"slow database: every outcome recorded", true, 0, ledger.Retry},
		{"locked past the grace: claims stay in quarantine", false, 500 * time.Millisecond, ledger.Claimed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.many(20, "example.com")
			lock, err := e.db.BeginTxx(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			released := sync.OnceFunc(func() { _ = lock.Rollback() })
			t.Cleanup(released)

			ctx, sigterm := context.WithCancel(context.Background())
			defer sigterm()
			var once sync.Once
			hooks := scan.Hooks{AfterClaimCommit: func(int) {
				once.Do(func() {
					// Only writes wait: EXCLUSIVE lets reads through.
					if _, err := lock.Exec(`LOCK TABLE notice_ledger IN EXCLUSIVE MODE`); err != nil {
						t.Error(err)
					}
					sigterm()
				})
			}}
			type result struct {
				s   scan.Summary
				err error
			}
			done := make(chan result, 1)
			go func() {
				s, err := e.pass(ctx, func(c *scan.Config) { c.Hooks = hooks; c.ShutdownGrace = tc.grace })
				done <- result{s, err}
			}()
			if tc.release {
				waitForLockWaiter(t, e)
				released()
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Minute):
				// A liveness bound, far above the grace: without it, the
				// recorder retried for 4 x 30s.
				t.Fatalf("the pass still runs a minute after SIGTERM (grace %v)", tc.grace)
			}
			released()
			if r.err == nil {
				t.Fatalf("a stopped pass returned no error: %+v", r.s)
			}
			if r.s.Minted != 20 {
				t.Fatalf("minted %d, want the batch of 20 claimed before SIGTERM", r.s.Minted)
			}
			for i := 1; i <= 20; i++ {
				id := subName(i)
				if st := e.state(id); st != tc.want && !(tc.release && st == ledger.Sent) {
					t.Errorf("%s: state %q, want %q", id, st, tc.want)
				}
			}
		})
	}
}

func subName(i int) string { return fmt.Sprintf("sub_%06d", i) }

// waitForLockWaiter returns once a session of this database waits for a
// lock on the ledger: the recorder is blocked.
func waitForLockWaiter(t *testing.T, e *env) {
	t.Helper()
	for i := 0; ; i++ {
		var n int
		if err := e.db.Get(&n, `SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'notice_ledger'::regclass`); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if i > 6000 {
			t.Fatal("no session ever waited on the ledger lock")
		}
		time.Sleep(10 * time.Millisecond) // polling PostgreSQL's lock table: no event to wait on
	}
}
