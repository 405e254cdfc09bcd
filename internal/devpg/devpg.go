// Package devpg runs a throwaway PostgreSQL server for tests, the demo and
// benchmarks, from the server binaries already installed on the machine
// (Debian's postgresql-NN package), in a private temporary directory, with no
// Docker and no network listener.
//
// Start runs initdb into a fresh directory and then the postmaster as a child
// of the calling process, reachable only through a Unix socket in that
// directory (listen_addresses is empty). Stop shuts it down the way
// `pg_ctl stop -m fast` does (SIGINT to the postmaster) and removes the
// directory.
//
// Running as root: initdb and postgres refuse to run as root, so when the
// effective uid is 0 they run as the `postgres` system user if it exists,
// otherwise as a `scanpg` system user that Start creates with useradd. The
// directory is chowned to that user and the processes get its uid and gid
// through SysProcAttr.Credential (no runuser, no su, no PAM). Everything
// else, the callers' connections included, stays root.
//
// Lifetime: the postmaster is started with a parent-death signal (SIGQUIT,
// PostgreSQL's immediate shutdown), so it dies with the process that started
// it even when that process is killed with SIGKILL and cannot run Stop. Stop
// in a defer plus signal handling (as in tools/devpg and pgtest.Main) is the
// normal path. The directory of a server whose owner was killed is left
// behind; the next Start in the same base directory removes such leftovers.
package devpg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/lib/pq" // the "postgres" driver, for the readiness check
)

// ErrNotFound reports that no directory holding initdb, pg_ctl and postgres
// was found. Its text is the one line a developer needs to fix it.
var ErrNotFound = errors.New("devpg: PostgreSQL server binaries (initdb, pg_ctl) not found; install them with: sudo apt-get install -y postgresql")

// Port is the port the server uses inside its private socket directory. No TCP
// port is opened, so every server can use the same number.
const Port = 5432

// Superuser is the database superuser that initdb creates (trust auth).
const Superuser = "postgres"

// fallbackUser is the system user created when running as root on a machine
// with no `postgres` user.
const fallbackUser = "scanpg"

// ownerFile, inside a server's directory, holds the pid of the process that
// started it, so that a later Start can remove directories of dead owners.
const ownerFile = "devpg.owner"

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path is
// 108 bytes including the terminating NUL).
const maxSocketPath = 107

// Config says how to start a server. The zero value is a fast, non-durable
// server with the binaries discovered by FindBinDir in the system temp
// directory.
type Config struct {
	// Durable keeps PostgreSQL's crash-safety defaults (fsync,
	// synchronous_commit, full_page_writes), for benchmarks whose numbers
	// should mean something. When false (the default) they are turned off,
	// which makes tests several times faster; a crash then loses the data,
	// which a throwaway server does not mind.
	Durable bool

	// BinDir is the directory holding initdb and postgres. Empty means
	// FindBinDir.
	BinDir string

	// BaseDir is where the server's temporary directory is created. Empty
	// means os.TempDir(), or /tmp when running as root (the server user must
	// be able to reach it) or when the socket path would be too long.
	BaseDir string

	// StartTimeout bounds initdb plus the server's startup. Zero means 60s.
	StartTimeout time.Duration
}

// Server is a running throwaway PostgreSQL server. Its methods are safe for
// concurrent use.
type Server struct {
	dir    string
	dsn    string
	binDir string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the postmaster has been reaped

	stopOnce sync.Once
	stopErr  error
}

// DSN returns the lib/pq keyword connection string of the server's
// `postgres` database as its superuser, for example
// `host=/tmp/devpg-123 port=5432 user=postgres dbname=postgres sslmode=disable`.
func (s *Server) DSN() string { return s.dsn }

// Dir returns the server's temporary directory: the socket directory, with
// the data directory in data/ and the server log in postgres.log.
func (s *Server) Dir() string { return s.dir }

// BinDir returns the directory of the binaries the server runs from.
func (s *Server) BinDir() string { return s.binDir }

// Pid returns the postmaster's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// FindBinDir returns the directory holding the PostgreSQL server binaries:
// `pg_config --bindir` when it has them, else the highest
// /usr/lib/postgresql/*/bin, else the directory of initdb on PATH. It returns
// ErrNotFound when none has initdb, pg_ctl and postgres.
func FindBinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); hasServerBinaries(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if dir := filepath.Dir(p); hasServerBinaries(dir) {
			return dir, nil
		}
	}
	return "", ErrNotFound
}

func hasServerBinaries(dir string) bool {
	if dir == "" {
		return false
	}
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionOf returns the version number of /usr/lib/postgresql/VERSION/bin,
// so that 15 sorts above 9.6.
func versionOf(binDir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return -1
	}
	return v
}

// Start initialises and starts a server and waits until it accepts
// connections. The caller must call Stop. The context bounds only the
// startup; the server lives until Stop or until the calling process dies.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	s, err := start(ctx, cfg)
	if err != nil && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("devpg: %w", err)
	}
	return s, err
}

// start is Start's steps: the binaries, the directory, initdb, then the
// postmaster, ready.
func start(ctx context.Context, cfg Config) (_ *Server, err error) {
	binDir, err := resolveBinDir(cfg.BinDir)
	if err != nil {
		return nil, err
	}
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir(cfg.BaseDir, cred)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	dataDir := filepath.Join(dir, "data")
	if err := initDB(ctx, binDir, dir, dataDir, cred); err != nil {
		return nil, err
	}
	if err := appendConf(filepath.Join(dataDir, "postgresql.conf"), dir, cfg.Durable); err != nil {
		return nil, err
	}
	return launch(ctx, binDir, dir, dataDir, cred)
}

// resolveBinDir returns configured when it holds the server binaries, or
// FindBinDir's when configured is empty.
func resolveBinDir(configured string) (string, error) {
	if configured == "" {
		return FindBinDir()
	}
	if !hasServerBinaries(configured) {
		return "", fmt.Errorf("%s: %w", configured, ErrNotFound)
	}
	return configured, nil
}

// makeDir creates the server's private directory under the base directory
// (after removing abandoned ones there), records its owner and, when the
// server runs as another user, gives it to that user.
func makeDir(configuredBase string, cred *syscall.Credential) (string, error) {
	base := baseDir(configuredBase, cred != nil)
	removeAbandoned(base)
	dir, err := os.MkdirTemp(base, "devpg-")
	if err != nil {
		return "", fmt.Errorf("create directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("write owner file: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("chown %s to the server user: %w", dir, err)
		}
	}
	return dir, nil
}

// initDB runs initdb into dataDir: trust authentication for Superuser,
// UTF8, the C locale.
func initDB(ctx context.Context, binDir, dir, dataDir string, cred *syscall.Credential) error {
	initdb := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"--pgdata", dataDir, "--username", Superuser, "--auth", "trust",
		"--encoding", "UTF8", "--locale", "C", "--no-sync", "--no-instructions")
	initdb.Dir = dir
	initdb.Env = serverEnv()
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// launch starts the postmaster on dataDir, logging to dir/postgres.log,
// and waits until it accepts connections.
func launch(ctx context.Context, binDir, dir, dataDir string, cred *syscall.Credential) (*Server, error) {
	logPath := filepath.Join(dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open server log: %w", err)
	}
	defer logFile.Close() // the child keeps its own descriptor

	cmd := exec.Command(filepath.Join(binDir, "postgres"), "-D", dataDir)
	cmd.Dir = dir
	cmd.Env = serverEnv()
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: cred,
		// Its own process group: a Ctrl-C on the terminal reaches the
		// command under test, not the server, which Stop then shuts down
		// in order.
		Setpgid: true,
		// Dies with us even when we are SIGKILLed (immediate shutdown).
		Pdeathsig: syscall.SIGQUIT,
	}

	s := &Server{
		dir:    dir,
		binDir: binDir,
		cmd:    cmd,
		exited: make(chan struct{}),
		dsn:    KeywordDSN(map[string]string{"host": dir, "port": strconv.Itoa(Port), "user": Superuser, "dbname": "postgres", "sslmode": "disable"}),
	}
	if err := s.run(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if err := s.waitReady(ctx, logPath); err != nil {
		_ = s.kill()
		return nil, err
	}
	return s, nil
}

// run starts the postmaster from a goroutine locked to its OS thread and
// reaps it from there. Linux sends the parent-death signal when the thread
// that forked the child exits, not the process, and the Go runtime may retire
// threads; a locked thread lives until the goroutine unlocks it, which it
// does only after the postmaster has exited.
func (s *Server) run() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	return <-started
}

func (s *Server) waitReady(ctx context.Context, logPath string) error {
	db, err := sql.Open("postgres", s.dsn+" connect_timeout=5")
	if err != nil {
		return err
	}
	defer db.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = db.PingContext(pingCtx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited during startup: %s\n%s", s.cmd.ProcessState, logTail(logPath))
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready: %w (last error: %v)\n%s", ctx.Err(), err, logTail(logPath))
		case <-tick.C:
		}
	}
}

// Stop shuts the server down like `pg_ctl stop -m fast` (SIGINT: sessions
// are ended, the server exits), escalating to an immediate shutdown and then
// SIGKILL if it takes more than 30s, and removes its directory. Calling it
// again returns the first result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		err := s.shutdown(syscall.SIGINT, 30*time.Second)
		if rmErr := os.RemoveAll(s.dir); rmErr != nil && err == nil {
			err = rmErr
		}
		if err != nil {
			s.stopErr = fmt.Errorf("devpg: stop: %w", err)
		}
	})
	return s.stopErr
}

func (s *Server) kill() error { return s.shutdown(syscall.SIGQUIT, 5*time.Second) }

func (s *Server) shutdown(sig syscall.Signal, grace time.Duration) error {
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{sig, grace}, {syscall.SIGQUIT, 5 * time.Second}, {syscall.SIGKILL, 5 * time.Second}} {
		select {
		case <-s.exited:
			return nil
		default:
		}
		_ = s.cmd.Process.Signal(step.sig)
		select {
		case <-s.exited:
			return nil
		case <-time.After(step.wait):
		}
	}
	return fmt.Errorf("postgres (pid %d) did not exit", s.cmd.Process.Pid)
}

// appendConf writes the server's settings into its postgresql.conf, so that a
// developer can also start the directory by hand with pg_ctl.
func appendConf(path, socketDir string, durable bool) error {
	conf := []string{
		"",
		"# devpg",
		"listen_addresses = ''",
		"unix_socket_directories = " + quoteConf(socketDir),
		"port = " + strconv.Itoa(Port),
		"max_connections = 200",
		"shared_buffers = 128MB",
		"timezone = 'UTC'",
		"log_timezone = 'UTC'",
	}
	if !durable {
		conf = append(conf, "fsync = off", "synchronous_commit = off", "full_page_writes = off")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("configure: %w", err)
	}
	if _, err := f.WriteString(strings.Join(conf, "\n") + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("configure: %w", err)
	}
	return f.Close()
}

func quoteConf(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

// KeywordDSN renders lib/pq keyword=value pairs in a stable order, quoting
// values that are empty or contain spaces, quotes or backslashes.
func KeywordDSN(kv map[string]string) string {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	order := map[string]int{"host": 1, "port": 2, "user": 3, "dbname": 4, "sslmode": 5}
	sort.Slice(keys, func(i, j int) bool {
		oi, oj := order[keys[i]], order[keys[j]]
		if oi == 0 {
			oi = 100
		}
		if oj == 0 {
			oj = 100
		}
		if oi != oj {
			return oi < oj
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+QuoteValue(kv[k]))
	}
	return strings.Join(parts, " ")
}

// QuoteValue quotes a value for a lib/pq keyword=value string when it is
// empty or contains spaces, quotes or backslashes, and returns it unchanged
// otherwise.
func QuoteValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n'\\") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(v) + "'"
}

// serverCredential returns the credential to run the server binaries with:
// nil when not root, else the `postgres` user's, else the fallback user's
// (created when missing).
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		u, err = user.Lookup(fallbackUser)
	}
	if err != nil {
		useradd, lookErr := exec.LookPath("useradd")
		if lookErr != nil {
			useradd = "/usr/sbin/useradd" // sbin may not be on PATH
		}
		out, addErr := exec.Command(useradd, "--system", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", fallbackUser).CombinedOutput()
		// Another process may have created it meanwhile: look again either way.
		if u, err = user.Lookup(fallbackUser); err != nil {
			return nil, fmt.Errorf("running as root and no %q or %q user: useradd: %v %s",
				"postgres", fallbackUser, addErr, strings.TrimSpace(string(out)))
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: uid %q: %w", u.Username, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: gid %q: %w", u.Username, u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func baseDir(configured string, asOtherUser bool) string {
	if configured != "" {
		return configured
	}
	dir := os.TempDir()
	// The server user must be able to reach the directory, and the socket
	// path (dir/devpg-NNNNNNNNNN/.s.PGSQL.5432) must fit in sun_path.
	if asOtherUser || len(dir)+len("/devpg-0123456789/.s.PGSQL.5432") > maxSocketPath {
		return "/tmp"
	}
	return dir
}

// removeAbandoned removes directories of servers whose owner process no
// longer exists and whose postmaster is gone too (the parent-death signal
// took it down). Errors are ignored: this is housekeeping.
func removeAbandoned(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "devpg-*"))
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		if alive(pidFrom(filepath.Join(dir, ownerFile))) {
			continue
		}
		if alive(pidFrom(filepath.Join(dir, "data", "postmaster.pid"))) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, ownerFile)); err != nil {
			continue // not ours
		}
		_ = os.RemoveAll(dir)
	}
}

// pidFrom returns the pid on the first line of a file, or 0.
func pidFrom(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// alive reports whether a process exists; a process of another user that we
// may not signal counts as alive.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// serverEnv is the environment of initdb and postgres: ours without the PG*
// variables that would redirect them, in the C locale.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LANG=C", "LC_ALL=C")
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// Credential returns the credential that the server binaries, and other
// daemons that must run as the data's owner (a test's Patroni, whose
// initdb refuses root), run with: nil when not root, else the `postgres`
// user's, else a `scanpg` system user's (created when missing).
func Credential() (*syscall.Credential, error) { return serverCredential() }
