package schedule_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"
	"github.com/rs/zerolog"

	"scan/internal/policy"
	"scan/internal/schedule"
)

// pass is one call of RunPass, which waits for the test's answer.
type pass struct {
	now   time.Time
	reply chan error
}

// harness runs a Loop on a fake clock, with the real advisory lock on a
// database of the test's own; each pass is handed to the test on passes.
type harness struct {
	clock  *fakeClock
	db     *sqlx.DB
	log    *logBuf
	passes chan pass
	done   chan error // Run's result
	cancel context.CancelFunc
}

func startLoop(t *testing.T, spec string, start time.Time, db *sqlx.DB) *harness {
	t.Helper()
	sched, err := policy.ParseSchedule(spec)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{clock: newFakeClock(start), db: db, log: &logBuf{}, passes: make(chan pass), done: make(chan error, 1)}
	log := zerolog.New(h.log)
	loop, err := schedule.New(schedule.Config{
		Schedule: sched, Spec: spec, Clock: h.clock, Log: log,
		Lock: schedule.NewAdvisoryLock(db, log),
		RunPass: func(ctx context.Context, now time.Time) error {
			p := pass{now: now, reply: make(chan error)}
			h.passes <- p
			return <-p.reply
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- loop.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-h.done
	})
	return h
}

// testCtx bounds a test's waits: a hang fails instead of blocking.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func (h *harness) pass(ctx context.Context, t *testing.T) pass {
	t.Helper()
	select {
	case p := <-h.passes:
		return p
	case <-ctx.Done():
		t.Fatalf("no pass ran; log:\n%s", h.log)
		return pass{}
	}
}

func (h *harness) result(ctx context.Context, t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		return err
	case <-ctx.Done():
		t.Fatalf("Run did not return; log:\n%s", h.log)
		return nil
	}
}

// tryLock takes the scheduler lock as another scheduler would.
func tryLock(t *testing.T, db *sqlx.DB) (func(), error) {
	t.Helper()
	return schedule.NewAdvisoryLock(db, zerolog.Nop()).TryLock(context.Background())
}

// The loop waits for each firing (computed in UTC, whatever the zone of
// the clock), runs a pass at that instant under the lock, releases the
// lock, and waits for the next firing; cancelling it while it waits ends
// Run with nil.
func TestLoopRunsAPassAtEachFiring(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	db := lockDB(t)
	h := startLoop(t, "0 2 * * *", time.Date(2026, 6, 1, 12, 0, 0, 0, ny), db)

	for day := 2; day <= 3; day++ {
		at := h.clock.next(ctx, t)
		if want := time.Date(2026, 6, day, 2, 0, 0, 0, time.UTC); !at.Equal(want) {
			t.Fatalf("armed for %v, want %v", at, want)
		}
		h.clock.Set(at)
		p := h.pass(ctx, t)
		if !p.now.Equal(at) || p.now.Location() != time.UTC {
			t.Errorf("pass at %v, want %v in UTC", p.now, at)
		}
		if _, err := tryLock(t, db); !errors.Is(err, schedule.ErrHeld) {
			t.Errorf("during the pass, another scheduler's TryLock = %v, want ErrHeld", err)
		}
		p.reply <- nil
	}
	// The loop waits for 4 June: the lock of the 3 June pass is free.
	if at := h.clock.next(ctx, t); !at.Equal(time.Date(2026, 6, 4, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("armed for %v, want 4 June 02:00 UTC", at)
	}
	unlock, err := tryLock(t, db)
	if err != nil {
		t.Fatalf("after the pass, the lock is still taken: %v", err)
	}
	unlock()
	h.cancel()
	if err := h.result(ctx, t); err != nil {
		t.Errorf("Run = %v after cancel, want nil", err)
	}
	for _, want := range []string{`"next_pass":"2026-06-02T02:00:00Z"`, `"cron":"0 2 * * *"`, "waiting for the next pass", "scheduler stopped"} {
		if !strings.Contains(h.log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, h.log)
		}
	}
}

// While another scheduler holds the lock, a firing is skipped (no pass,
// a log line) and the loop waits for the next one, which runs once the
// lock is free.
func TestLoopSkipsWhileAnotherSchedulerHoldsTheLock(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db := lockDB(t)
	unlock, err := tryLock(t, db)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	h := startLoop(t, "@every 1m", start, db)
	h.clock.Set(h.clock.next(ctx, t))
	at := h.clock.next(ctx, t) // armed again: that firing was skipped
	select {
	case p := <-h.passes:
		t.Fatalf("a pass ran at %v while another scheduler held the lock", p.now)
	default:
	}
	if !strings.Contains(h.log.String(), "another scheduler's pass is running; skipping this pass") {
		t.Errorf("no skip line in the log:\n%s", h.log)
	}
	unlock()
	h.clock.Set(at)
	p := h.pass(ctx, t)
	if !p.now.Equal(at) {
		t.Errorf("pass at %v, want %v", p.now, at)
	}
	p.reply <- nil
}

// A database the loop cannot reach skips the firing, says so, and the
// loop carries on.
func TestLoopSkipsWhenTheDatabaseIsUnreachable(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	db, err := sqlx.Open("postgres", "host=127.0.0.1 port="+strconv.Itoa(addr.Port)+" dbname=scan sslmode=disable connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := startLoop(t, "@every 1m", time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), db)
	h.clock.Set(h.clock.next(ctx, t))
	h.clock.next(ctx, t) // armed again: skipped
	select {
	case p := <-h.passes:
		t.Fatalf("a pass ran at %v without the lock", p.now)
	default:
	}
	if !strings.Contains(h.log.String(), "cannot reach the database; skipping this pass") {
		t.Errorf("no unreachable line in the log:\n%s", h.log)
	}
}

// A failed pass is logged and the loop goes on; a pass that RunPass ends
// with Stop ends Run with its error, the lock released.
func TestLoopPassErrors(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db := lockDB(t)
	h := startLoop(t, "@every 1m", time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), db)

	h.clock.Set(h.clock.next(ctx, t))
	h.pass(ctx, t).reply <- errors.New("provider unreachable")
	h.clock.Set(h.clock.next(ctx, t)) // the loop goes on
	if !strings.Contains(h.log.String(), "pass failed; the next one will pick up where it left off") ||
		!strings.Contains(h.log.String(), "provider unreachable") {
		t.Errorf("the failed pass is not in the log:\n%s", h.log)
	}

	bad := errors.New("bad configuration")
	h.pass(ctx, t).reply <- schedule.Stop(bad)
	if err := h.result(ctx, t); err != bad {
		t.Errorf("Run = %v, want the pass's error %v", err, bad)
	}
	unlock, err := tryLock(t, db)
	if err != nil {
		t.Fatalf("after Run returned, the lock is still taken: %v", err)
	}
	unlock()
}

// Cancelled during a pass (SIGTERM), the loop lets the pass finish, logs
// no failure for its context error, and returns nil without waiting for
// another firing.
func TestLoopStopsAfterThePassInFlight(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db := lockDB(t)
	h := startLoop(t, "@every 1m", time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), db)
	h.clock.Set(h.clock.next(ctx, t))
	p := h.pass(ctx, t)
	h.cancel()
	p.reply <- context.Canceled
	if err := h.result(ctx, t); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	select {
	case at := <-h.clock.armed:
		t.Errorf("the loop armed another timer (%v) after it was stopped", at)
	default:
	}
	if strings.Contains(h.log.String(), "pass failed") {
		t.Errorf("a stopped pass was logged as failed:\n%s", h.log)
	}
}

// The lock is released even when the context it was taken with has ended
// (a pass stopped by SIGTERM): another scheduler can take it at once.
func TestAdvisoryLockReleasesAfterCancel(t *testing.T) {
	t.Parallel()
	db := lockDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	unlock, err := schedule.NewAdvisoryLock(db, zerolog.Nop()).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tryLock(t, db); !errors.Is(err, schedule.ErrHeld) {
		t.Fatalf("second TryLock = %v, want ErrHeld", err)
	}
	cancel()
	unlock()
	unlock2, err := tryLock(t, db)
	if err != nil {
		t.Fatalf("TryLock after the release = %v", err)
	}
	unlock2()
}

// New refuses a Config without its required fields.
func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	sched, err := policy.ParseSchedule("0 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	run := func(context.Context, time.Time) error { return nil }
	lock := schedule.NewAdvisoryLock(nil, zerolog.Nop())
	for name, cfg := range map[string]schedule.Config{
		"Schedule": {Lock: lock, RunPass: run},
		"Lock":     {Schedule: sched, RunPass: run},
		"RunPass":  {Schedule: sched, Lock: lock},
	} {
		if _, err := schedule.New(cfg); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("New without %s = %v, want an error naming it", name, err)
		}
	}
	if _, err := schedule.New(schedule.Config{Schedule: sched, Lock: lock, RunPass: run}); err != nil {
		t.Errorf("New = %v", err)
	}
}

// The lock is a transaction's (it survives PgBouncer's transaction
// pooling): a holder whose transaction is ended by the server (its
// backend terminated, as a failover or an idle-transaction timeout would)
// sees the context of its pass cancelled by the watchdog, and the lock is
// free for another scheduler at once; a crashed holder blocks nobody.
func TestAdvisoryLockLostCancelsThePass(t *testing.T) {
	t.Parallel()
	db := lockDB(t)
	lock := schedule.NewAdvisoryLock(db, zerolog.Nop())
	lock.WatchEvery = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	passCtx, unlock, err := lock.TryLockContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	var held int
	if err := db.Get(&held, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 736361 AND objid = 1 AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil || held != 1 {
		t.Fatalf("advisory locks held: %d, %v", held, err)
	}
	if _, err := tryLock(t, db); !errors.Is(err, schedule.ErrHeld) {
		t.Fatalf("second TryLock = %v, want ErrHeld", err)
	}
	if passCtx.Err() != nil {
		t.Fatal("the pass's context ended while the lock is held")
	}
	var ok bool
	if err := db.Get(&ok, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = 736361 AND objid = 1 AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil || !ok {
		t.Fatalf("terminate the holder's backend: %v %v", ok, err)
	}
	select {
	case <-passCtx.Done():
	case <-ctx.Done():
		t.Fatal("the pass's context was not cancelled when its lock was lost")
	}
	unlock2, err := tryLock(t, db)
	if err != nil {
		t.Fatalf("TryLock after the holder's transaction ended = %v", err)
	}
	unlock2()
}
