package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/pgtest"
	"scan/internal/scan"
	"scan/internal/smtptest"
)

// watchBuf is an io.Writer that tests can wait on: WaitFor blocks until
// the text written so far contains a string a number of times.
type watchBuf struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newWatchBuf() *watchBuf { return &watchBuf{changed: make(chan struct{})} }

func (w *watchBuf) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	close(w.changed)
	w.changed = make(chan struct{})
	return n, err
}

func (w *watchBuf) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// WaitFor waits until s occurs at least n times, or ctx ends (then it
// fails the test).
func (w *watchBuf) WaitFor(ctx context.Context, t *testing.T, s string, n int) {
	t.Helper()
	for {
		w.mu.Lock()
		have, ch := strings.Count(w.buf.String(), s), w.changed
		w.mu.Unlock()
		if have >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waited for %d x %q, saw %d; output:\n%s", n, s, have, tail(w.String()))
		case <-ch:
		}
	}
}

// summaries decodes the pass summaries a scheduler printed.
func summaries(t *testing.T, out string) []scan.Summary {
	t.Helper()
	var ss []scan.Summary
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var s scan.Summary
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		ss = append(ss, s)
	}
	return ss
}

// holdReplies makes f's SMTP server hold its reply to every message until
// the returned release is called, then accept it (250). first is closed
// when the server has read the first message.
func holdReplies(f *fixture) (first <-chan struct{}, release func()) {
	firstCh, gate := make(chan struct{}), make(chan struct{})
	var once, relOnce sync.Once
	f.onMessage(func(smtptest.Received) {
		once.Do(func() { close(firstCh) })
		<-gate
	})
	f.t.Cleanup(func() { relOnce.Do(func() { close(gate) }) })
	return firstCh, func() { relOnce.Do(func() { close(gate) }) }
}

// ownDatabase creates a database for the test alone and returns its DSN
// (the fixture migrates it). The schedulers' advisory lock is one per
// database, not per schema: on the shared test database every test that
// runs `scan schedule` (here, refusal_test.go, pgbouncer_test.go) takes
// the same lock, and another test's pass holding it makes this test's
// schedulers skip when it counts on them to run. The database is dropped
// when the test ends.
func ownDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv(pgtest.EnvDSN)
	if base == "" {
		t.Fatalf("%s is not set", pgtest.EnvDSN)
	}
	admin := pgtest.Open(t, base)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "t_sched_" + hex.EncodeToString(rnd[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s`, name)); err != nil {
		t.Fatalf("create database %s (the test server's role needs CREATEDB): %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		return strings.TrimSpace(base) + " dbname=" + name // a later key wins
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

type scheduler struct {
	stdout, stderr *watchBuf
	done           chan int // the exit code
}

func startScheduler(ctx context.Context, getenv func(string) string, args ...string) *scheduler {
	s := &scheduler{stdout: newWatchBuf(), stderr: newWatchBuf(), done: make(chan int, 1)}
	go func() {
		s.done <- run(ctx, append([]string{"schedule"}, args...), getenv, strings.NewReader(""), s.stdout, s.stderr)
	}()
	return s
}

// Two schedulers on one database fire every second. While one's pass is
// in flight (its sends held by the SMTP server), the other fires, finds
// the advisory lock taken and skips: it runs no pass until the first has
// finished. Every notice goes out once.
func TestScheduleTwoSchedulersNeverOverlap(t *testing.T) {
	t.Parallel()
	const n = 30
	f := newFixture(t, n, ownDatabase(t))
	first, release := holdReplies(f)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	env := f.getenv("LOG_LEVEL=info")
	a := startScheduler(runCtx, env, "--cron", "@every 1s", "--batch-size", "10")
	b := startScheduler(runCtx, env, "--cron", "@every 1s", "--batch-size", "10")
	t.Cleanup(func() {
		if t.Failed() { // both sides: a lost lock shows in the holder's log
			t.Logf("scheduler a's log:\n%s\nscheduler b's log:\n%s", tail(a.stderr.String()), tail(b.stderr.String()))
		}
	})

	// A pass is in flight: the server holds its first message.
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("no message reached the SMTP server")
	}
	// The holder is the one whose pass claimed (a claim precedes its
	// send), not the first to log a skip: a scheduler may skip a firing,
	// then take the lock at the next one (had the other's first pass
	// ended, or had the lock been another's), and then both have skipped.
	const skipped = "another scheduler's pass is running"
	holder, other := a, b
	if strings.Contains(b.stderr.String(), `"batch claimed"`) {
		holder, other = b, a
	}
	if !strings.Contains(holder.stderr.String(), `"batch claimed"`) {
		t.Fatalf("a message was sent, but neither scheduler logged a claim\na:\n%s\nb:\n%s", tail(a.stderr.String()), tail(b.stderr.String()))
	}
	// The other scheduler fires twice meanwhile and skips both times.
	other.stderr.WaitFor(ctx, t, skipped, strings.Count(other.stderr.String(), skipped)+2)
	if got := summaries(t, other.stdout.String()); len(got) != 0 {
		t.Fatalf("the skipping scheduler ran %d passes while the other's was in flight: %+v", len(got), got)
	}
	if got := summaries(t, holder.stdout.String()); len(got) != 0 {
		t.Fatalf("the holder finished a pass while its sends were held: %+v", got)
	}

	release()
	holder.stdout.WaitFor(ctx, t, `"run_id"`, 1)
	// After that, both schedulers run passes again, which find nothing to
	// do; wait for one of the other's, proving the lock was released.
	other.stdout.WaitFor(ctx, t, `"run_id"`, 1)
	stop()
	for _, s := range []*scheduler{a, b} {
		if code := <-s.done; code != 0 {
			t.Errorf("scheduler exit %d\nstderr:\n%s", code, tail(s.stderr.String()))
		}
	}

	minted, sent, passes := 0, 0, 0
	for _, s := range []*scheduler{a, b} {
		for _, sum := range summaries(t, s.stdout.String()) {
			passes++
			minted += sum.Minted
			sent += sum.Sent
		}
	}
	if minted != n || sent != n {
		t.Errorf("%d passes minted %d and sent %d notices, want %d each", passes, minted, sent, n)
	}
	if tl := f.check(true); tl.sent != n || tl.received != n {
		t.Errorf("after both schedulers: %v, want %d sent and received", tl, n)
	}
}

// waitCh runs w.WaitFor(s) in the background and closes the returned
// channel when s has appeared; the wait ends with ctx.
func waitCh(ctx context.Context, t *testing.T, w *watchBuf, s string) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		for {
			w.mu.Lock()
			found, changed := strings.Contains(w.buf.String(), s), w.changed
			w.mu.Unlock()
			if found {
				close(ch)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
	}()
	return ch
}

// SIGTERM (the context main cancels on it) during a pass: the sends in
// flight finish and are recorded as sent, the rest of what it claimed is
// released for the next pass, nothing stays in quarantine, and the
// scheduler exits 0 without starting another pass.
func TestScheduleSIGTERMFinishesInFlightAndExits(t *testing.T) {
	t.Parallel()
	const n = 40
	f := newFixture(t, n, ownDatabase(t))
	first, release := holdReplies(f)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runCtx, sigterm := context.WithCancel(ctx)
	s := startScheduler(runCtx, f.getenv(), "--cron", "@every 1s", "--batch-size", "40")
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("no message reached the SMTP server")
	}
	sigterm()
	release()
	select {
	case code := <-s.done:
		if code != 0 {
			t.Fatalf("exit %d after SIGTERM\nstderr:\n%s", code, tail(s.stderr.String()))
		}
	case <-ctx.Done():
		t.Fatal("the scheduler did not exit after SIGTERM")
	}
	sums := summaries(t, s.stdout.String())
	if len(sums) != 1 {
		t.Fatalf("%d passes, want the one interrupted pass: %+v", len(sums), sums)
	}
	sum := sums[0]
	c := f.counts()
	received := f.smtp.Total()
	if received == 0 || received == n {
		t.Fatalf("the server read %d of %d messages; the test needs a pass stopped part-way", received, n)
	}
	if c[ledger.Sent] != received || sum.Sent != received {
		t.Errorf("ledger sent %d, summary sent %d, server received %d: every send in flight must finish and be recorded", c[ledger.Sent], sum.Sent, received)
	}
	if c[ledger.Claimed] != 0 {
		t.Errorf("%d claims left in quarantine after a clean shutdown", c[ledger.Claimed])
	}
	// Claimed just in time, the pass may not have claimed all n: every
	// notice it did claim is sent or released as retry.
	if c[ledger.Sent]+c[ledger.Retry] != sum.Minted || sum.Minted == 0 || sum.Minted > n {
		t.Errorf("ledger %v, minted %d: want every claimed notice sent or released as retry", c, sum.Minted)
	}
	if !strings.Contains(s.stderr.String(), "scheduler stopped") && !strings.Contains(s.stderr.String(), "pass aborted") {
		t.Errorf("no shutdown line in the log:\n%s", tail(s.stderr.String()))
	}
	f.check(false)
}
