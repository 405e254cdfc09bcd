package schedule_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/clock"
	"scan/internal/pgtest"
)

// TestMain gives the tests a PostgreSQL server (TEST_DATABASE_URL, or a
// throwaway devpg server).
func TestMain(m *testing.M) { pgtest.Main(m) }

// Statements the tests run on the server, outside the ledger.
const (
	databaseCreate = `CREATE DATABASE %s`
	databaseDrop   = `DROP DATABASE IF EXISTS %s WITH (FORCE)`
)

// lockDB returns a handle on a database of the test's own. The scheduler's
// advisory lock is one per database, not per schema: on the shared test
// database, another package's scheduler tests running at the same time
// would hold it. The database is dropped when the test ends. The test
// server's role needs CREATEDB (devpg's has it).
func lockDB(t *testing.T) *sqlx.DB {
	t.Helper()
	return pgtest.Open(t, lockDSN(t)) // closed before the drop (cleanups run last-in first-out)
}

// lockDSN creates the database of lockDB and returns its DSN.
func lockDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv(pgtest.EnvDSN)
	if base == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, or set it to a server of your own", pgtest.EnvDSN)
	}
	admin := pgtest.Open(t, base)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "t_schedule_" + hex.EncodeToString(rnd[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, fmt.Sprintf(databaseCreate, name)); err != nil {
		t.Fatalf("create database %s (the test server's role needs CREATEDB): %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, fmt.Sprintf(databaseDrop, name)); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	dsn := strings.TrimSpace(base) + " dbname=" + name // a later key wins
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + name
		dsn = u.String()
	}
	return dsn
}

// fakeClock is a clock.Clock whose time moves only when the test sets
// it. Each timer it arms is announced on armed (its deadline), which is
// the test's signal that the loop is waiting for its next firing.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]struct{}
	armed  chan time.Time
}

func newFakeClock(start time.Time) *fakeClock {
	return &fakeClock{now: start, timers: map[*fakeTimer]struct{}{}, armed: make(chan time.Time, 64)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- t.at
	} else {
		c.timers[t] = struct{}{}
	}
	c.armed <- t.at
	return t
}

// Set moves the clock to at and fires every timer due by then.
func (c *fakeClock) Set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = at
	for t := range c.timers {
		if !t.at.After(at) {
			delete(c.timers, t)
			t.ch <- t.at
		}
	}
}

// next waits for the loop to arm its next timer and returns its deadline.
func (c *fakeClock) next(ctx context.Context, t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-c.armed:
		return at
	case <-ctx.Done():
		t.Fatal("the loop armed no timer")
		return time.Time{}
	}
}

type fakeTimer struct {
	c  *fakeClock
	at time.Time
	ch chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, armed := t.c.timers[t]
	delete(t.c.timers, t)
	return armed
}

// Reset re-arms the timer d from the clock's now (the Loop never calls it;
// clock.Timer has it for the Dispatcher).
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, armed := t.c.timers[t]
	t.at = t.c.now.Add(d)
	if d <= 0 {
		delete(t.c.timers, t)
		select {
		case t.ch <- t.at:
		default:
		}
	} else {
		t.c.timers[t] = struct{}{}
	}
	return armed
}

// logBuf is a log destination safe for the loop's goroutine and the test's.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
