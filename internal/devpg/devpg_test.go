package devpg_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"

	"scan/internal/devpg"
)

// The helper process of TestServerDiesWithParent: start a server, print its
// postmaster pid, then wait to be killed.
func TestMain(m *testing.M) {
	if os.Getenv("DEVPG_TEST_HELPER") == "1" {
		srv, err := devpg.Start(context.Background(), devpg.Config{})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("pid", srv.Pid(), srv.Dir())
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func start(t *testing.T, cfg devpg.Config) *devpg.Server {
	t.Helper()
	srv, err := devpg.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	return srv
}

func show(t *testing.T, db *sql.DB, setting string) string {
	t.Helper()
	var v string
	if err := db.QueryRow("SHOW " + setting).Scan(&v); err != nil {
		t.Fatalf("show %s: %v", setting, err)
	}
	return v
}

func TestFindBinDir(t *testing.T) {
	dir, err := devpg.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestNotFoundMessage(t *testing.T) {
	want := "devpg: PostgreSQL server binaries (initdb, pg_ctl) not found; install them with: sudo apt-get install -y postgresql"
	if got := devpg.ErrNotFound.Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err := devpg.Start(context.Background(), devpg.Config{BinDir: t.TempDir()})
	if !errors.Is(err, devpg.ErrNotFound) {
		t.Errorf("Start with an empty BinDir: got %v, want ErrNotFound", err)
	}
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	srv := start(t, devpg.Config{})

	if !strings.HasPrefix(srv.DSN(), "host="+srv.Dir()+" port=5432 user=postgres dbname=postgres sslmode=disable") {
		t.Errorf("DSN = %q", srv.DSN())
	}
	db, err := sql.Open("postgres", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for setting, want := range map[string]string{
		"listen_addresses":        "",
		"unix_socket_directories": srv.Dir(),
		"max_connections":         "200",
		"shared_buffers":          "128MB",
		"fsync":                   "off",
		"synchronous_commit":      "off",
		"full_page_writes":        "off",
		"server_encoding":         "UTF8",
		"lc_collate":              "C",
		"TimeZone":                "UTC",
	} {
		if got := show(t, db, setting); got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
	if _, err := db.Exec(`CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	pid := srv.Pid()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("postmaster %d still exists after Stop (kill: %v)", pid, err)
	}
	if _, err := os.Stat(srv.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s still exists after Stop (%v)", srv.Dir(), err)
	}
}

func TestDurable(t *testing.T) {
	t.Parallel()
	srv := start(t, devpg.Config{Durable: true})
	db, err := sql.Open("postgres", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, setting := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
		if got := show(t, db, setting); got != "on" {
			t.Errorf("%s = %q, want on", setting, got)
		}
	}
}

func TestRunsAsUnprivilegedUser(t *testing.T) {
	t.Parallel()
	srv := start(t, devpg.Config{})
	fi, err := os.Stat(filepath.Join(srv.Dir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	owner := int(fi.Sys().(*syscall.Stat_t).Uid)
	if os.Geteuid() == 0 && owner == 0 {
		t.Errorf("running as root, the data directory belongs to root; want the postgres or scanpg user")
	}
	if os.Geteuid() != 0 && owner != os.Geteuid() {
		t.Errorf("data directory owner = %d, want %d", owner, os.Geteuid())
	}
}

// The server must not outlive the process that started it, even when that
// process is SIGKILLed and cannot call Stop.
func TestServerDiesWithParent(t *testing.T) {
	t.Parallel()
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), "DEVPG_TEST_HELPER=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()

	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	fields := strings.Fields(line)
	if len(fields) != 3 || fields[0] != "pid" {
		t.Fatalf("helper said %q", line)
	}
	pid, _ := strconv.Atoi(fields[1])
	dir := fields[2]
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("postmaster %d not running: %v", pid, err)
	}

	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("postmaster %d still running 15s after its parent was killed", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Its directory is left behind; the next Start in the same base
	// directory removes it once it is a minute old.
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("abandoned directory: %v", err)
	}
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	start(t, devpg.Config{BaseDir: filepath.Dir(dir)})
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("abandoned directory %s not removed by the next Start (%v)", dir, err)
	}
}

func TestQuoteValue(t *testing.T) {
	for in, want := range map[string]string{
		"plain":    "plain",
		"":         "''",
		"a b":      "'a b'",
		`it's`:     `'it\'s'`,
		`back\sl`:  `'back\\sl'`,
		"/tmp/x-1": "/tmp/x-1",
	} {
		if got := devpg.QuoteValue(in); got != want {
			t.Errorf("QuoteValue(%q) = %s, want %s", in, got, want)
		}
	}
	got := devpg.KeywordDSN(map[string]string{"host": "/tmp/a b", "application_name": `it's`, "user": "u"})
	if want := `host='/tmp/a b' user=u application_name='it\'s'`; got != want {
		t.Errorf("KeywordDSN = %s, want %s", got, want)
	}
	cfg, err := pq.NewConfig(got)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "/tmp/a b" || cfg.ApplicationName != "it's" || cfg.User != "u" {
		t.Errorf("lib/pq read %q back as host=%q application_name=%q user=%q", got, cfg.Host, cfg.ApplicationName, cfg.User)
	}
}
