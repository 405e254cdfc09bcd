// Package pgtest gives each test its own schema in a real PostgreSQL server.
//
// The server is the one named by TEST_DATABASE_URL (set by
// `go run ./tools/devpg -- go test ./...`, which `make test` does, or by a
// developer pointing at a server of their own). A package whose TestMain
// calls Main also works under a plain `go test`: Main then starts a throwaway
// server with internal/devpg for the test binary and stops it afterwards.
// Tests never skip for want of a database; they fail and say how to get one.
//
// Each call to New or DSN creates a schema t_<test>_<random>, returns a
// connection (or DSN) with lib/pq's binary_parameters on, as ledger.Open
// connects (the ledger's batch statements send binary arrays), whose
// search_path is that schema (so unqualified CREATE TABLE
// and queries stay inside it, over every connection of the pool and in child
// processes given the DSN), and drops the schema with CASCADE when the test
// ends. Tests using different schemas can run in parallel. Set PGTEST_KEEP=1
// to keep the schemas for inspection.
//
// Everything in this package is safe for concurrent use by parallel tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // the "postgres" driver

	"scan/internal/devpg"
)

// EnvDSN names the environment variable holding the test server's DSN
// (lib/pq keyword string or postgres:// URL). Its database is used, not
// created, and must allow CREATE SCHEMA.
const EnvDSN = "TEST_DATABASE_URL"

// Statements pgtest runs on the server, outside any test's schema.
const (
	// SchemaCreate creates a test's schema; %s is a generated identifier.
	SchemaCreate = `CREATE SCHEMA %s`
	// SchemaDrop drops a test's schema with everything in it.
	SchemaDrop = `DROP SCHEMA IF EXISTS %s CASCADE`
)

// Main runs the tests of a package from its TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// When TEST_DATABASE_URL is unset it starts a non-durable devpg server, sets
// TEST_DATABASE_URL for the tests (and their child processes), runs them and
// stops the server. It does not start one when the binary only lists tests
// (`go test -list`). It exits the process with the tests' exit code, or 1
// when the server cannot be started; on SIGINT or SIGTERM it stops the
// server and exits with 128+signal.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if os.Getenv(EnvDSN) != "" || listing() {
		return m.Run()
	}
	srv, err := devpg.Start(context.Background(), devpg.Config{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %s is unset and no throwaway server could be started: %v\n", EnvDSN, err)
		return 1
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}()
	// Interrupted: stop the server in order rather than leave its directory
	// behind (the parent-death signal would stop the server itself).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		_ = srv.Stop()
		os.Exit(128 + int(sig.(syscall.Signal)))
	}()
	if err := os.Setenv(EnvDSN, srv.DSN()); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	defer os.Unsetenv(EnvDSN)
	return m.Run()
}

func listing() bool {
	f := flag.Lookup("test.list")
	return f != nil && f.Value.String() != ""
}

// New creates a fresh schema for the test and returns a database handle whose
// every connection uses it as search_path. The handle is closed and the
// schema dropped when the test ends. It fails the test when no server is
// configured or reachable.
func New(t testing.TB) *sqlx.DB {
	t.Helper()
	return Open(t, DSN(t))
}

// DSN creates a fresh schema for the test, as New does, and returns a DSN
// scoped to it (the server's DSN plus search_path=<schema> and
// binary_parameters=yes), for sql.Open or as DATABASE_URL of a child
// process. The schema is dropped when the test
// ends.
func DSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvDSN)
	if base == "" {
		t.Fatalf("pgtest: %s is not set: run the tests with `make test` "+
			"(go run ./tools/devpg -- go test ./...), or call pgtest.Main from TestMain, "+
			"or set %s to a server of your own", EnvDSN, EnvDSN)
	}
	admin, err := adminDB(base)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvDSN, err)
	}
	schema := schemaName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, fmt.Sprintf(SchemaCreate, schema)); err != nil {
		t.Fatalf("pgtest: create schema %s on the server of %s: %v", schema, EnvDSN, err)
	}
	t.Cleanup(func() {
		if os.Getenv("PGTEST_KEEP") != "" {
			t.Logf("pgtest: keeping schema %s (PGTEST_KEEP is set)", schema)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, fmt.Sprintf(SchemaDrop, schema)); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	dsn, err := WithSearchPath(base, schema)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvDSN, err)
	}
	if dsn, err = WithBinaryParameters(dsn); err != nil {
		t.Fatalf("pgtest: %s: %v", EnvDSN, err)
	}
	return dsn
}

// Open connects to dsn (typically from DSN), with binary_parameters on
// unless dsn sets it (WithBinaryParameters), and closes the handle when the
// test ends; cleanups run last-in first-out, so it is closed before the
// schema of an earlier DSN call is dropped. It fails the test when the server
// cannot be reached.
func Open(t testing.TB, dsn string) *sqlx.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := WithBinaryParameters(dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	db, err := sqlx.ConnectContext(ctx, "postgres", dsn)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// WithSearchPath returns dsn with the run-time parameter search_path set to
// schema, in the DSN's own form (keyword string or postgres:// URL). lib/pq
// sends parameters it does not know to the server at connection start.
func WithSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse URL: %w", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// In a keyword string a later key wins over an earlier one.
	return strings.TrimSpace(dsn) + " search_path=" + devpg.QuoteValue(schema), nil
}

// WithBinaryParameters returns dsn with lib/pq's binary_parameters=yes,
// in the DSN's own form, unless dsn sets binary_parameters itself: a
// []byte parameter then travels in binary format, as on every connection
// ledger.Open makes, which the ledger's batch statements need (they send
// their columns as binary arrays).
func WithBinaryParameters(dsn string) (string, error) {
	if strings.Contains(dsn, "binary_parameters") {
		return dsn, nil
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse URL: %w", err)
		}
		q := u.Query()
		q.Set("binary_parameters", "yes")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return strings.TrimSpace(dsn) + " binary_parameters=yes", nil
}

var admins sync.Map // base DSN -> *sql.DB

// adminDB returns a small shared pool on the server's own search_path, used
// to create and drop schemas. It lives as long as the test binary.
func adminDB(dsn string) (*sql.DB, error) {
	if db, ok := admins.Load(dsn); ok {
		return db.(*sql.DB), nil
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	if prev, loaded := admins.LoadOrStore(dsn, db); loaded {
		db.Close()
		return prev.(*sql.DB), nil
	}
	return db, nil
}

// schemaName returns t_<sanitised test name>_<12 random hex digits>, at most
// 63 bytes, lower case, so it never needs quoting.
func schemaName(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return "t_" + strings.Trim(b.String(), "_") + "_" + hex.EncodeToString(rnd[:])
}
