package pgtest_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"scan/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func currentSchema(t *testing.T, q sqlx.QueryerContext) string {
	t.Helper()
	var s string
	if err := sqlx.GetContext(context.Background(), q, &s, `SELECT current_schema()`); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchemasAreIsolated(t *testing.T) {
	t.Parallel()
	a, b := pgtest.New(t), pgtest.New(t)
	sa, sb := currentSchema(t, a), currentSchema(t, b)
	if sa == sb || !strings.HasPrefix(sa, "t_testschemasareisolated_") {
		t.Fatalf("schemas %q and %q", sa, sb)
	}

	// The same table name in both, different contents.
	for db, n := range map[*sqlx.DB]int{a: 1, b: 2} {
		db.MustExec(`CREATE TABLE subscriptions (id text PRIMARY KEY)`)
		for i := 0; i < n; i++ {
			db.MustExec(`INSERT INTO subscriptions VALUES ($1)`, strings.Repeat("x", i+1))
		}
	}
	for db, want := range map[*sqlx.DB]int{a: 1, b: 2} {
		var n int
		if err := db.Get(&n, `SELECT count(*) FROM subscriptions`); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("count = %d, want %d", n, want)
		}
	}
}

// Every connection of the pool uses the schema, not only the first.
func TestEveryConnectionUsesTheSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	want := currentSchema(t, db)
	ctx := context.Background()
	var conns []*sqlx.Conn
	for i := 0; i < 5; i++ {
		c, err := db.Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		if got := currentSchema(t, c); got != want {
			t.Errorf("connection on schema %q, want %q", got, want)
		}
		c.Close()
	}

	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got string
			if err := db.Get(&got, `SELECT current_schema()`); err != nil || got != want {
				t.Errorf("concurrent query: schema %q, err %v", got, err)
			}
		}()
	}
	wg.Wait()
}

// DSN works with plain database/sql, as a child process would use it.
func TestDSNUsableByDatabaseSQL(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	if !strings.Contains(dsn, "search_path=t_") {
		t.Fatalf("DSN %q has no search_path", dsn)
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE notice_ledger (notice_key text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	// The table is in the test's schema, not in public.
	var schema string
	if err := db.QueryRow(`SELECT table_schema FROM information_schema.tables WHERE table_name = 'notice_ledger'`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(schema, "t_") {
		t.Errorf("table created in schema %q", schema)
	}
	// And Open on the same DSN sees it.
	var n int
	if err := pgtest.Open(t, dsn).Get(&n, `SELECT count(*) FROM notice_ledger`); err != nil {
		t.Errorf("Open(DSN): %v", err)
	}
}

func TestSchemaDroppedAfterTest(t *testing.T) {
	t.Parallel()
	var schema string
	t.Run("inner", func(t *testing.T) {
		db := pgtest.New(t)
		db.MustExec(`CREATE TABLE x (id int)`)
		schema = currentSchema(t, db)
	})
	admin, err := sql.Open("postgres", os.Getenv(pgtest.EnvDSN))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var exists bool
	if err := admin.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("schema %s still exists after its test ended", schema)
	}
}

func TestWithSearchPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"host=/tmp/devpg-1 port=5432 user=postgres dbname=postgres sslmode=disable",
			"host=/tmp/devpg-1 port=5432 user=postgres dbname=postgres sslmode=disable search_path=t_a"},
		{"dbname=x search_path=public ", "dbname=x search_path=public search_path=t_a"},
		{"postgres://u:p@db.internal:5432/scan?sslmode=disable",
			"postgres://u:p@db.internal:5432/scan?search_path=t_a&sslmode=disable"},
		{"postgresql://localhost/scan?search_path=public",
			"postgresql://localhost/scan?search_path=t_a"},
	} {
		got, err := pgtest.WithSearchPath(tc.in, "t_a")
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("WithSearchPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// fatalTB records the message of a Fatalf and ends the goroutine, as
// testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper()      {}
func (f *fatalTB) Name() string { return "fake" }
func (f *fatalTB) Fatalf(format string, a ...any) {
	f.msg = fmt.Sprintf(format, a...)
	runtime.Goexit()
}
func (f *fatalTB) Cleanup(func()) { panic("Cleanup reached without a server") }

// Without a server the test fails, naming the variable and the fix; it is
// never skipped.
func TestDSNWithoutServerFails(t *testing.T) {
	t.Setenv(pgtest.EnvDSN, "")
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pgtest.DSN(tb)
	}()
	<-done
	for _, want := range []string{"TEST_DATABASE_URL is not set", "make test", "pgtest.Main"} {
		if !strings.Contains(tb.msg, want) {
			t.Errorf("message %q does not mention %q", tb.msg, want)
		}
	}
}
