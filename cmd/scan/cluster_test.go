package main

// Real clusters for the durability tests (issue 29): a durable devpg
// server whose configuration, crashes, restarts, base backups, point-in-
// time recoveries and standbys the tests drive with PostgreSQL's own
// tools (pg_ctl, pg_basebackup), as the server's owner.

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"scan/internal/devpg"
)

// cluster is a durable throwaway server and what the tests do to it.
type cluster struct {
	t    *testing.T
	srv  *devpg.Server
	dir  string // where the socket is; data is dir/data
	dsn  string
	cred *syscall.Credential // the owner of the data, when running as root
}

// newCluster starts a durable server.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	srv, err := devpg.Start(context.Background(), devpg.Config{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, srv: srv, dir: srv.Dir(), dsn: srv.DSN()}
	t.Cleanup(func() {
		c.pgctlQuiet("stop", "-m", "immediate")
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	if os.Geteuid() == 0 {
		fi, err := os.Stat(c.data())
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		c.cred = &syscall.Credential{Uid: st.Uid, Gid: st.Gid}
	}
	return c
}

// configure applies settings with ALTER SYSTEM and restarts the server.
func (c *cluster) configure(conf ...string) {
	c.t.Helper()
	for _, s := range conf {
		c.exec(`ALTER SYSTEM SET ` + s)
	}
	c.pgctl("restart", "-m", "fast", "-l", filepath.Join(c.dir, "restart.log"))
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// exec runs statements as the superuser on a connection of its own.
func (c *cluster) exec(q string, args ...any) {
	c.t.Helper()
	db, err := sql.Open("postgres", c.dsn)
	if err != nil {
		c.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q, args...); err != nil {
		c.t.Fatalf("%s: %v", q, err)
	}
}

// query returns one value as text.
func (c *cluster) query(q string, args ...any) string {
	c.t.Helper()
	db, err := sql.Open("postgres", c.dsn)
	if err != nil {
		c.t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow(q, args...).Scan(&s); err != nil {
		c.t.Fatalf("%s: %v", q, err)
	}
	return s
}

// tool runs one of the server's binaries as the data's owner.
func (c *cluster) tool(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.srv.BinDir(), name), args...)
	cmd.Env = append(os.Environ(), "LANG=C", "LC_ALL=C")
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd.CombinedOutput()
}

// pgctl runs pg_ctl on the data directory, waiting for the result.
func (c *cluster) pgctl(args ...string) {
	c.t.Helper()
	c.pgctlOn(c.data(), args...)
}

func (c *cluster) pgctlOn(data string, args ...string) {
	c.t.Helper()
	if out, err := c.tool("pg_ctl", append([]string{"-D", data, "-w", "-t", "120"}, args...)...); err != nil {
		c.t.Fatalf("pg_ctl %v: %v\n%s", args, err, out)
	}
}

// pgctlQuiet stops whatever runs on the data directory, for cleanups.
func (c *cluster) pgctlQuiet(args ...string) {
	_, _ = c.tool("pg_ctl", append([]string{"-D", c.data(), "-w", "-t", "60"}, args...)...)
}

// crash stops the server as a power cut would: `pg_ctl stop -m immediate`
// (no checkpoint; what is not flushed is lost).
func (c *cluster) crash() { c.pgctl("stop", "-m", "immediate") }

// start starts the server again on its data directory.
func (c *cluster) start() {
	c.pgctl("start", "-l", filepath.Join(c.dir, "restart.log"))
}

// mkdir makes a directory the server's owner can write.
func (c *cluster) mkdir(name string) string {
	c.t.Helper()
	d := filepath.Join(c.dir, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		c.t.Fatal(err)
	}
	if c.cred != nil {
		if err := os.Chown(d, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			c.t.Fatal(err)
		}
	}
	return d
}

// waitPrimary waits, with a deadline, until the server accepts writes
// (recovery over, promoted).
func (c *cluster) waitPrimary(dsn string) {
	c.t.Helper()
	c.waitRecovery(dsn, false)
}

// waitRecovery waits, with a deadline, until the server at dsn answers
// with pg_is_in_recovery() = want.
func (c *cluster) waitRecovery(dsn string, want bool) {
	c.t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		c.t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var inRecovery bool
		err := db.QueryRow(`SELECT pg_is_in_recovery()`).Scan(&inRecovery)
		if err == nil && inRecovery == want {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the server did not reach in recovery = %v: %v, %v", want, inRecovery, err)
		}
		<-tick.C
	}
}

// waitRestarted waits, with a deadline, until the standby at dsn, whose
// walreceiver pid was killed, has restarted its processes and accepts
// connections again in recovery (its shared memory then no longer lists
// that walreceiver).
func (c *cluster) waitRestarted(dsn string, pid int) {
	c.t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		c.t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var ok bool
		err := db.QueryRow(`SELECT pg_is_in_recovery() AND NOT EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE pid = $1)`, pid).Scan(&ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the standby did not restart after its walreceiver was killed: %v", err)
		}
		<-tick.C
	}
}

// archiveUpTo switches to a new WAL file and waits until the archiver has
// archived the one holding the current position.
func (c *cluster) archiveUpTo() {
	c.t.Helper()
	wal := c.query(`SELECT pg_walfile_name(pg_switch_wal())`)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		last := c.query(`SELECT COALESCE(last_archived_wal, '') FROM pg_stat_archiver`)
		if last >= wal {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("WAL %s not archived (last %q)", wal, last)
		}
		time.Sleep(20 * time.Millisecond) // polls the archiver's own progress
	}
}

// confLines appends settings to a data directory's postgresql.auto.conf.
func (c *cluster) confLines(data string, lines ...string) {
	c.t.Helper()
	f, err := os.OpenFile(filepath.Join(data, "postgresql.auto.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		c.t.Fatal(err)
	}
}

// touch creates an empty file owned by the server's owner.
func (c *cluster) touch(path string) {
	c.t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		c.t.Fatal(err)
	}
	if c.cred != nil {
		if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			c.t.Fatal(err)
		}
	}
}

func quoteLit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
