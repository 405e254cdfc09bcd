package scan_test

import (
	"cmp"
	"context"
	"sync"
	"testing"

	"scan/internal/scan"
)

// The summary's suppressed counts, at the end of the pass, the due notices
// other runs handled, also those another pass took while this one ran:
// before this pass read them (it never sees them), or after (its claims
// lose). The end of the pass counts a window again only when another run
// may have written there: each case below must agree with the ledger.
func TestSuppressedCountsWhatAConcurrentPassTook(t *testing.T) {
	t.Parallel()
	const n = 30
	for _, tc := range []struct {
		name string
		// hooks pauses pass a once, at a claim, to run other (another pass
		// over the same relation) to its end.
		hooks func(other func()) scan.Hooks
		// shard: other is shard 0 of 2, else a whole pass.
		shard bool
		// batch: pass a's page size (10 unless set): at 50, its first page
		// reads every notice, so that what other takes, pass a loses at
		// its claims rather than never sees.
		batch int
	}{
		{name: "no other pass", hooks: func(func()) scan.Hooks { return scan.Hooks{} }},
		{name: "another pass takes the rest after the first claim", hooks: func(other func()) scan.Hooks {
			return scan.Hooks{AfterClaimCommit: once(other)}
		}},
		{name: "another pass takes every notice before the first claim", hooks: func(other func()) scan.Hooks {
			return scan.Hooks{BeforeClaim: once(other)}
		}},
		{name: "another pass takes every notice read, before they are claimed", batch: 50, hooks: func(other func()) scan.Hooks {
			return scan.Hooks{BeforeClaim: once(other)}
		}},
		{name: "a shard's pass takes its part before the first claim", shard: true, hooks: func(other func()) scan.Hooks {
			return scan.Hooks{BeforeClaim: once(other)}
		}},
		{name: "a shard's pass takes its part after the first claim", shard: true, hooks: func(other func()) scan.Hooks {
			return scan.Hooks{AfterClaimCommit: once(other)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.many(n, "example.com")
			var b scan.Summary
			var bErr error
			ran := false
			other := func() {
				ran = true
				b, bErr = e.pass(context.Background(), func(c *scan.Config) {
					c.RunID, c.BatchSize = "run-b", 10
					if tc.shard {
						c.Shard, c.Shards = 0, 2
					}
				})
			}
			batch := cmp.Or(tc.batch, 10)
			a := e.mustPass(func(c *scan.Config) { c.RunID, c.BatchSize, c.Hooks = "run-a", batch, tc.hooks(other) })
			if bErr != nil {
				t.Fatalf("other pass: %v", bErr)
			}
			var others int
			if err := e.db.Get(&others, `SELECT count(*) FROM notice_ledger WHERE channel = 'email' AND run_id <> 'run-a'`); err != nil {
				t.Fatal(err)
			}
			if a.Suppressed != others || a.Minted+a.Suppressed != n || a.Eligible != n {
				t.Fatalf("pass a: minted %d, suppressed %d, eligible %d; the ledger has %d rows of other runs, want minted + suppressed = eligible = %d (other pass: %+v)",
					a.Minted, a.Suppressed, a.Eligible, others, n, b)
			}
			if ran && !tc.shard && b.Minted+b.Suppressed != n {
				t.Fatalf("other pass: minted %d, suppressed %d, want %d in all", b.Minted, b.Suppressed, n)
			}
		})
	}
}

// once returns a hook that runs fn on its first call only.
func once(fn func()) func(int) {
	var o sync.Once
	return func(int) { o.Do(fn) }
}
