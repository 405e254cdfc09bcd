package main

// The fleet's rates (issue 38): passes running at once against one ledger
// (two plain runs and a sharded pair) keep a domain's rate between them,
// as the receiving server's clock sees it; a pass alone still reaches it.

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"scan/internal/smtptest"
)

const (
	fleetRate  = 20.0 // the one domain's per_second
	fleetSpan  = 5 * time.Second
	fleetSlack = 1.15 // the most over the rate any span may show
)

// fleetPolicy is the fixture's policy with every domain at fleetRate a
// second, burst 1: the global bucket stays far above it.
var fleetPolicy = strings.Replace(testPolicy,
	"default: {per_second: 100000, burst: 10000}\n  global: {per_second: 100000, burst: 10000}",
	"default: {per_second: 20, burst: 1}\n  global: {per_second: 1000, burst: 1000}", 1)

// fleetFixture is a fixture of n notices, all to one domain, paced by
// fleetPolicy, whose SMTP server notes when each message arrives and then
// calls also, if given.
func fleetFixture(t *testing.T, n int, also ...func()) (*fixture, func() []time.Time) {
	t.Helper()
	f := newFixture(t, n, "")
	if !strings.Contains(fleetPolicy, "per_second: 20, burst: 1}") {
		t.Fatal("fleetPolicy no longer replaces testPolicy's rates: update the strings.Replace")
	}
	f.setPolicy(fleetPolicy)
	if _, err := f.db.Exec(`UPDATE subscriptions SET email = 'user' || substr(id, 5) || '@fleet.example'`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var at []time.Time
	f.onMessage(func(smtptest.Received) {
		now := time.Now()
		mu.Lock()
		at = append(at, now)
		mu.Unlock()
		for _, fn := range also {
			fn()
		}
	})
	return f, func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(at)
		slices.SortFunc(out, time.Time.Compare)
		return out
	}
}

// busiestSpan returns the most arrivals within any span of length d
// (each span starting at an arrival) and where it starts.
func busiestSpan(at []time.Time, d time.Duration) (int, time.Duration) {
	most, from, j := 0, time.Duration(0), 0
	for i := range at {
		for j < len(at) && at[j].Sub(at[i]) < d {
			j++
		}
		if j-i > most {
			most, from = j-i, at[i].Sub(at[0])
		}
	}
	return most, from
}

// checkFleetRate fails the test if any span of fleetSpan saw more than
// fleetSlack times the rate, and returns the arrivals' overall rate.
func checkFleetRate(t *testing.T, at []time.Time) float64 {
	t.Helper()
	if len(at) < 2 {
		t.Fatalf("%d arrivals", len(at))
	}
	most, from := busiestSpan(at, fleetSpan)
	limit := fleetSlack * fleetRate * fleetSpan.Seconds()
	took := at[len(at)-1].Sub(at[0])
	overall := float64(len(at)-1) / took.Seconds()
	t.Logf("%d arrivals over %v (%.1f/s); busiest %v: %d (%.1f/s) at +%v; limit %.0f",
		len(at), took.Round(time.Millisecond), overall, fleetSpan, most, float64(most)/fleetSpan.Seconds(), from.Round(time.Millisecond), limit)
	if float64(most) > limit {
		t.Errorf("%d messages within %v, over %.2f x %v/s", most, fleetSpan, fleetSlack, fleetRate)
	}
	return overall
}

// Two concurrent `scan run` and a sharded pair over 400 notices to one
// domain at 20/s: no 5-second span at the server above 23/s, and each
// notice arrives once.
func TestFleetRateAcrossConcurrentPasses(t *testing.T) {
	t.Parallel()
	const n = 400
	f, arrivals := fleetFixture(t, n)
	args := [][]string{
		{"run", "--batch-size", "20"},
		{"run", "--batch-size", "20"},
		{"run", "--batch-size", "20", "--shard", "0/2"},
		{"run", "--batch-size", "20", "--shard", "1/2"},
	}
	children := make([]*child, len(args))
	for i, a := range args {
		children[i] = f.start(f.env(), a...)
	}
	sent := 0
	for i, c := range children {
		r := c.wait()
		if r.code != 0 {
			t.Fatalf("pass %v: exit %d\n%s", args[i], r.code, tail(r.stderr))
		}
		s := r.summary(t)
		t.Logf("pass %v: sent %d, retry %d", args[i], s.Sent, s.Retry)
		sent += s.Sent
	}
	tl := f.check(true) // each Message-ID received at most once
	if sent != n || tl.received != n || f.smtp.Total() != n {
		t.Fatalf("sent %d, %v: want each of %d notices sent and received once", sent, tl, n)
	}
	checkFleetRate(t, arrivals())
}

// A pass alone is not slowed by the lease: 400 notices at 20/s take about
// 20 s, and no span runs over the rate either.
func TestFleetRateOnePassReachesTheRate(t *testing.T) {
	t.Parallel()
	const n = 400
	f, arrivals := fleetFixture(t, n)
	scanBinary(t) // built before the clock starts
	start := time.Now()
	s := f.mustRun(f.env())
	took := time.Since(start)
	if s.Sent != n || f.smtp.Total() != n {
		t.Fatalf("summary %+v, received %d: want %d sent", s, f.smtp.Total(), n)
	}
	overall := checkFleetRate(t, arrivals())
	t.Logf("the pass took %v", took.Round(time.Millisecond))
	// Loose on a loaded machine: the rate's pace is n/20 = 20 s.
	if overall < 0.8*fleetRate || took > 2*n/fleetRate*time.Second {
		t.Errorf("one pass sent at %.1f/s and took %v, want about %v/s", overall, took, fleetRate)
	}
}

// A pass SIGKILLed mid-send leaves its lease to run out by itself: the
// next pass, started at once, sends its first message within seconds (the
// killed pass's slots reached a second ahead at most) and then at the
// rate, and no span over both passes runs above it.
func TestFleetRateKilledPassLeaseRunsOut(t *testing.T) {
	t.Parallel()
	const n, k = 200, 50
	var seen atomic.Int64
	var killed atomic.Pointer[child]
	done := make(chan struct{})
	f, arrivals := fleetFixture(t, n, func() {
		if seen.Add(1) == k {
			killed.Load().kill()
			close(done)
		}
	})
	c := f.start(f.env(), "run", "--batch-size", "20")
	killed.Store(c)
	<-done // the kill was sent at the k-th arrival: no sleep
	if r := c.wait(); !r.killed {
		t.Fatalf("the pass was not killed at message %d (exit %d)\n%s", k, r.code, tail(r.stderr))
	}
	before := len(arrivals())
	start := time.Now()
	s := f.mustRun(f.env())
	after := arrivals()
	if len(after) <= before {
		t.Fatalf("the next pass sent nothing: %+v", s)
	}
	first := after[before].Sub(start)
	t.Logf("killed at message %d (%d arrived); the next pass's first message %v after its start, sent %d", k, before, first.Round(time.Millisecond), s.Sent)
	if first > 3*time.Second {
		t.Errorf("the next pass's first message came %v after its start: the killed pass's lease held it", first)
	}
	checkFleetRate(t, after)
	f.check(false) // each notice received at most once
}
