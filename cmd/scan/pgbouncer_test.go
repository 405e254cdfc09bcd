package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"

	"scan/internal/pgtest"
)

// Statements the PgBouncer test runs on the server, outside the ledger.
const (
	bouncerDatabaseCreate = `CREATE DATABASE %s`
	bouncerDatabaseDrop   = `DROP DATABASE IF EXISTS %s WITH (FORCE)`
	// bouncerProbe is a statement with a parameter, as most of scan's.
	bouncerProbe = `SELECT $1::int`
	// bouncerProbeSimple is one without: lib/pq's simple query.
	bouncerProbeSimple = `SELECT 1`
)

// pgbouncerBinary returns Debian's pgbouncer, or skips the test where it
// is not installed, unless in CI (CI=true), where it must be (.ci/run
// installs it).
func pgbouncerBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"pgbouncer", "/usr/sbin/pgbouncer"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("pgbouncer is not installed, and CI=true: .ci/run installs it (apt-get install pgbouncer)")
	}
	t.Skip("pgbouncer is not installed (apt-get install pgbouncer, or run .ci/run): the PgBouncer test is skipped outside CI")
	return ""
}

// bouncerDatabase creates a database of the test's own on the test server
// (PgBouncer sends no search_path: the ledger lives in its public schema)
// and returns its direct DSN. It is dropped when the test ends.
func bouncerDatabase(t *testing.T) (direct string, cfg pq.Config) {
	t.Helper()
	base := os.Getenv(pgtest.EnvDSN)
	if base == "" {
		t.Fatalf("%s is not set", pgtest.EnvDSN)
	}
	admin := pgtest.Open(t, base)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "t_pgbouncer_" + hex.EncodeToString(rnd[:])
	if _, err := admin.Exec(fmt.Sprintf(bouncerDatabaseCreate, name)); err != nil {
		t.Fatalf("create database %s (the test server's role needs CREATEDB): %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(fmt.Sprintf(bouncerDatabaseDrop, name)); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	cfg, err := pq.NewConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = name
	direct = strings.TrimSpace(base) + " dbname=" + name // a later key wins
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + name
		direct = u.String()
	}
	return direct, cfg
}

// startPgBouncer runs Debian's pgbouncer in transaction pooling on
// loopback in front of the database of cfg, with a pool smaller than the
// pass's connections (so that clients share server connections), and
// returns the plain URL an operator would write. It runs as the server's
// user when the test runs as root (pgbouncer refuses root). It is stopped
// when the test ends.
func startPgBouncer(t *testing.T, cfg pq.Config) string {
	t.Helper()
	bin := pgbouncerBinary(t)
	dir, err := os.MkdirTemp("", "pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	host := cfg.Host
	if host == "" {
		host = "localhost"
	}
	backend := fmt.Sprintf("host=%s port=%d user=%s dbname=%s", host, cfg.Port, cfg.User, cfg.Database)
	if cfg.Password != "" {
		backend += " password=" + cfg.Password
	}
	ini := fmt.Sprintf(`[databases]
scan = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = 2
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
`, backend, port)
	path := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(path, []byte(ini), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: bouncerCredential(t)}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	})
	// pgbouncer says "process up" once it listens.
	up := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), "process up") {
				up <- nil
				_, _ = io.Copy(io.Discard, stderr)
				return
			}
		}
		up <- fmt.Errorf("pgbouncer ended before it was up:\n%s", strings.Join(lines, "\n"))
	}()
	select {
	case err := <-up:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("pgbouncer did not come up in 30s")
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/scan?sslmode=disable", url.User(cfg.User).String(), port)
}

// bouncerCredential is the user pgbouncer runs as: nil unless root, then
// the test server's (postgres, or devpg's scanpg).
func bouncerCredential(t *testing.T) *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	for _, name := range []string{"postgres", "scanpg"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	t.Fatal("running as root with no postgres or scanpg user for pgbouncer (it refuses root)")
	return nil
}

// startWatched runs the scan binary with env and args, its stdout and
// stderr in watchBufs; it is killed when the test ends if still running.
func startWatched(t *testing.T, ctx context.Context, env []string, args ...string) (*exec.Cmd, *watchBuf, *watchBuf, <-chan error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, scanBinary(t), args...)
	cmd.Env = env
	out, errb := newWatchBuf(), newWatchBuf()
	cmd.Stdout, cmd.Stderr = out, errb
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	return cmd, out, errb, done
}

// splitStatements runs, on `clients` connections of a pool on dsn at
// once, `each` statements outside a transaction: half the clients a
// statement with a parameter (as most of scan's), the other half one
// without (lib/pq's simple query, which drops a server connection's
// unnamed statement, as the scheduler's lock statement does). It returns
// how many of the former failed because PgBouncer ran their Bind on
// another server connection than their Parse ("unnamed prepared statement
// does not exist", or a mismatch with the statement found there), and
// the first other error.
func splitStatements(t *testing.T, dsn string, clients, each int) (split int, other error) {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(clients)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var got int
				var err error
				want := i
				if c%2 == 0 {
					err = db.QueryRow(bouncerProbe, i).Scan(&got)
				} else {
					err = db.QueryRow(bouncerProbeSimple).Scan(&got)
					want = 1
				}
				mu.Lock()
				switch {
				case err != nil && (strings.Contains(err.Error(), "prepared statement") || strings.Contains(err.Error(), "bind message")):
					split++
				case err != nil && other == nil:
					other = err
				case err == nil && got != want && other == nil:
					other = fmt.Errorf("got %d, want %d", got, want)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return split, other
}

// Issue 38, section 3: behind Debian's PgBouncer in transaction pooling,
// with the plain URL an operator writes, two `scan schedule` processes
// (the real binary) never run a pass at the same time and every notice
// reaches the SMTP server once; then `scan run` sends what is new, `scan
// run` again sends nothing, and `scan lookup`, `scan quarantine`, the dry
// run and `scan migrate` (goose's lease-row lock) work.
func TestPgBouncerTransactionPooling(t *testing.T) {
	t.Parallel()
	direct, cfg := bouncerDatabase(t)
	const n = 30
	f := newFixture(t, n, direct)
	f.dsn = startPgBouncer(t, cfg) // every child goes through PgBouncer

	// Why: lib/pq's Parse/Describe/Sync, then Bind/Execute/Sync, of a
	// statement with parameters outside a transaction land on two server
	// connections when clients share them. binary_parameters=yes (which
	// ledger.Open sets) sends them in one go.
	if split, err := splitStatements(t, f.dsn+"&binary_parameters=no", 8, 100); split == 0 || err != nil {
		t.Errorf("control: lib/pq without binary_parameters behind PgBouncer: %d statements split, %v; want some split (else this test no longer shows the problem)", split, err)
	}
	if split, err := splitStatements(t, f.dsn+"&binary_parameters=yes", 8, 100); split != 0 || err != nil {
		t.Errorf("with binary_parameters=yes: %d statements split, %v; want none", split, err)
	}
	first, release := holdReplies(f)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := f.env("LOG_LEVEL=info")
	a, aOut, aErr, aDone := startWatched(t, ctx, env, "schedule", "--cron", "@every 1s", "--batch-size", "10")
	b, bOut, bErr, bDone := startWatched(t, ctx, env, "schedule", "--cron", "@every 1s", "--batch-size", "10")

	select {
	case <-first:
	case <-ctx.Done():
		t.Fatalf("no message reached the SMTP server\nA:\n%s\nB:\n%s", tail(aErr.String()), tail(bErr.String()))
	}
	const skipped = "another scheduler's pass is running"
	holderOut, otherOut, otherErr := aOut, bOut, bErr
	select {
	case <-waitCh(ctx, t, aErr, skipped):
		holderOut, otherOut, otherErr = bOut, aOut, aErr
	case <-waitCh(ctx, t, bErr, skipped):
	}
	otherErr.WaitFor(ctx, t, skipped, 2)
	if got := summaries(t, otherOut.String()); len(got) != 0 {
		t.Fatalf("the skipping scheduler ran %d passes while the other's was in flight: %+v", len(got), got)
	}
	if got := summaries(t, holderOut.String()); len(got) != 0 {
		t.Fatalf("the holder finished a pass while its sends were held: %+v", got)
	}
	release()
	holderOut.WaitFor(ctx, t, `"run_id"`, 1)
	otherOut.WaitFor(ctx, t, `"run_id"`, 1) // the lock was released, through PgBouncer
	for _, c := range []*exec.Cmd{a, b} {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for i, d := range []<-chan error{aDone, bDone} {
		if err := <-d; err != nil {
			t.Errorf("scheduler %d: %v\n%s", i, err, tail([]*watchBuf{aErr, bErr}[i].String()))
		}
	}
	minted, sent := 0, 0
	for _, o := range []*watchBuf{aOut, bOut} {
		for _, s := range summaries(t, o.String()) {
			minted += s.Minted
			sent += s.Sent
		}
	}
	for _, e := range []*watchBuf{aErr, bErr} {
		if strings.Contains(e.String(), "prepared statement") || strings.Contains(e.String(), "pass failed") {
			t.Errorf("a scheduler's pass failed behind PgBouncer:\n%s", tail(e.String()))
		}
	}
	if minted != n || sent != n {
		t.Errorf("the schedulers minted %d and sent %d, want %d each", minted, sent, n)
	}
	if tl := f.check(true); tl.sent != n || tl.received != n {
		t.Errorf("after both schedulers: %v, want %d sent and received once", tl, n)
	}

	f.add(10)
	if s := f.mustRun(f.env()); s.Sent != 10 {
		t.Errorf("scan run behind PgBouncer: %+v, want 10 sent", s)
	}
	if s := f.mustRun(f.env()); s.Sent != 0 || s.Minted != 0 {
		t.Errorf("scan run again behind PgBouncer: %+v, want nothing", s)
	}
	if tl := f.check(true); tl.sent != n+10 || tl.received != n+10 {
		t.Errorf("after the runs: %v, want %d sent and received once", tl, n+10)
	}
	for _, args := range [][]string{{"lookup", subID(1)}, {"quarantine", "--older-than", "0s"}, {"run", "--dry-run"}, {"migrate"}} {
		if r := f.scan(f.env(), args...); r.code != 0 {
			t.Errorf("scan %v behind PgBouncer: exit %d\n%s", args, r.code, tail(r.stderr))
		}
	}
}
