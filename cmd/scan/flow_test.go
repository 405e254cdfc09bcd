package main

// Flow control as an operator meets it: the real binary, a real SMTP
// server, buckets slow enough that the backlog takes many seconds, and
// SIGKILL at random moments or a time budget shorter than the work.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// slowPolicy is the fixture's policy with its four recipient domains at
// 20/s each: 80 notices a second in all, so 600 notices are 7.5 s of
// sending.
var slowPolicy = strings.Replace(testPolicy,
	"default: {per_second: 100000, burst: 10000}\n  global: {per_second: 100000, burst: 10000}",
	"default: {per_second: 20, burst: 20}\n  global: {per_second: 1000, burst: 1000}", 1)

const (
	slowPace        = 4 * 20 // notices a second over the fixture's four domains
	slowConcurrency = 8
)

func (f *fixture) setPolicy(text string) {
	f.t.Helper()
	if text == slowPolicy && !strings.Contains(text, "per_second: 20,") {
		f.t.Fatal("slowPolicy no longer replaces testPolicy's rates: update the strings.Replace")
	}
	if err := os.WriteFile(f.policy, []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// SIGKILL at a random moment strands (claims, never received) no more
// than the buckets' pace over two seconds or twice the concurrency,
// whatever the backlog: claims run at most one horizon ahead of the
// sends. With claims made a batch (1000) at a time, as before, a kill
// stranded almost the whole backlog.
func TestKillStrandsNoMoreThanTheHorizon(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SCAN_KILL_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (set SCAN_KILL_SEED to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	const n = 600
	bound := max(2*slowConcurrency, 2*slowPace)
	f := newFixture(t, n, "")
	f.setPolicy(slowPolicy)
	stranded := 0
	for i := range 3 {
		k := int64(1 + rng.IntN(150))
		app := fmt.Sprintf("scan-kill-%d-%d", seed, i)
		f.killAtMessage(i+1, k, f.env("PGAPPNAME="+app), "run")
		f.idle()
		// A claim statement the killed process had sent still runs, and
		// commits, in its backend: count once that backend is gone.
		f.backendsGone(app)
		tl := f.check(false)
		now := tl.quarantined - tl.quarantinedDelivered - stranded
		stranded += now
		t.Logf("kill %d at message %d: %v; %d newly stranded (bound %d)", i+1, k, tl, now, bound)
		if now > bound {
			t.Fatalf("kill %d stranded %d claims that never reached the server, over max(2 x concurrency, pace over 2 s) = %d", i+1, now, bound)
		}
	}
	s := f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("after the final pass: %v; summary %+v", tl, s)
	if tl.sent+tl.quarantined != n || tl.quarantined-tl.quarantinedDelivered != stranded {
		t.Fatalf("after the final pass: %v (stranded before %d)", tl, stranded)
	}
}

// A pass with a time budget shorter than its work exits 0 at the budget
// with the rest deferred and nothing stranded; the next pass finishes the
// work, and nothing is received twice.
func TestMaxDurationDefersTheRest(t *testing.T) {
	t.Parallel()
	const n = 600
	f := newFixture(t, n, "")
	f.setPolicy(slowPolicy)
	budget := 2 * time.Second
	scanBinary(t) // built before the clock starts: the build is not the pass
	start := time.Now()
	r := f.scan(f.env("SCAN_MAX_DURATION=1h"), "run", "--max-duration", budget.String())
	took := time.Since(start)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 at the end of the budget\n%s", r.code, tail(r.stderr))
	}
	s := r.summary(t)
	tl := f.check(false)
	t.Logf("budget %v: took %v; %v; summary %+v", budget, took.Round(time.Millisecond), tl, s)
	// The flag wins over SCAN_MAX_DURATION; the pass then stops claiming
	// and finishes what it claimed: about a horizon (1 s) past the budget.
	if took > budget+10*time.Second || s.DurationMS < budget.Milliseconds() {
		t.Errorf("the pass took %v with a budget of %v", took, budget)
	}
	if s.Deferred == 0 || s.Minted+s.Deferred != n || s.Eligible != n || s.Sent != s.Minted || s.Quarantine != 0 {
		t.Fatalf("summary %+v: want the rest deferred and every claim sent", s)
	}
	if tl.quarantined != 0 || tl.sent != s.Sent || tl.received != s.Sent {
		t.Fatalf("after the budget: %v, summary %+v: nothing may be stranded", tl, s)
	}
	if !logHas(r.stderr, "deferred", float64(s.Deferred)) {
		t.Errorf("no log line says how many were deferred:\n%s", tail(r.stderr))
	}
	// The budget comes from the environment as well.
	r = f.scan(f.env("SCAN_MAX_DURATION=1s"), "run")
	s2 := r.summary(t)
	if r.code != 0 || s2.Deferred == 0 || s2.Minted == 0 || s2.Minted+s2.Deferred != s.Deferred {
		t.Fatalf("second pass (SCAN_MAX_DURATION=1s): exit %d, summary %+v; want more sent and the rest deferred", r.code, s2)
	}
	last := f.mustRun(f.env())
	tl = f.check(true)
	t.Logf("then without a budget: %v; summary %+v", tl, last)
	if last.Deferred != 0 || tl.sent != n || tl.received != n {
		t.Fatalf("after the unbudgeted pass: %v, summary %+v", tl, last)
	}
}

// idle waits until the SMTP server has read everything that left a killed
// process.
func (f *fixture) idle() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.smtp.Idle(ctx); err != nil {
		f.t.Fatalf("after the kill: %v", err)
	}
}

// backendsGone waits until no PostgreSQL backend of application name app
// is left: a killed client's backend finishes (and autocommits) the
// statement it was running, then exits when it cannot send the result.
func (f *fixture) backendsGone(app string) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := f.db.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app); err != nil {
			f.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%d backends of the killed pass %s still there after 30s", n, app)
		}
		// Polling a condition the server does not signal; the wait ends
		// as soon as it holds.
		time.Sleep(10 * time.Millisecond)
	}
}
