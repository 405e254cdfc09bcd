package main

// A real Patroni cluster for issue 38 (a switchover is a non-event, a
// lossy failover still refuses): etcd as the store, two Patroni-managed
// PostgreSQL nodes on loopback ports, run as the data's owner (initdb
// refuses root). Debian's patroni and etcd-server (.ci/run installs them).

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"scan/internal/devpg"
)

// patroni is a running cluster: etcd and two nodes.
type patroni struct {
	t     *testing.T
	dir   string
	cred  *syscall.Credential
	bin   string // PostgreSQL's bindir
	etcd  *exec.Cmd
	nodes [2]*patroniNode
}

type patroniNode struct {
	name    string
	pgPort  int
	apiPort int
	data    string
	conf    string
	cmd     *exec.Cmd
}

// needPatroni skips the test where patroni or etcd is not installed,
// except under CI=true, where .ci/run installed them: there it fails.
func needPatroni(t *testing.T) {
	t.Helper()
	for _, name := range []string{"patroni", "patronictl", "etcd"} {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (.ci/run installs it): %v", name, err)
			}
			t.Skipf("%s is not installed (Debian: apt-get install patroni etcd-server)", name)
		}
	}
}

// port is freePort as a number.
func port(t *testing.T) int {
	t.Helper()
	n, err := strconv.Atoi(freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// newPatroni starts etcd and two nodes, synchronous_mode as sync says,
// and waits until node1 leads and node2 streams from it (as its
// synchronous standby when sync).
func newPatroni(t *testing.T, sync bool) *patroni {
	t.Helper()
	needPatroni(t)
	cred, err := devpg.Credential()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := devpg.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "scan-patroni-")
	if err != nil {
		t.Fatal(err)
	}
	p := &patroni{t: t, dir: dir, cred: cred, bin: bin}
	t.Cleanup(p.stop)
	p.chown(dir)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	client, peer := port(t), port(t)
	p.etcd = p.daemon("etcd.log", "etcd", "--data-dir", filepath.Join(dir, "etcd"), "--name", "default",
		"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", client),
		"--advertise-client-urls", fmt.Sprintf("http://127.0.0.1:%d", client),
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", peer))
	for i := range p.nodes {
		n := &patroniNode{name: fmt.Sprintf("node%d", i+1), pgPort: port(t), apiPort: port(t)}
		n.data = filepath.Join(dir, n.name)
		n.conf = filepath.Join(dir, n.name+".yml")
		p.write(n.conf, p.config(n, client, sync))
		p.nodes[i] = n
	}
	p.startNode(p.nodes[0])
	p.waitRole(p.nodes[0], "leader")
	p.startNode(p.nodes[1])
	want := "replica"
	if sync {
		want = "sync_standby"
	}
	p.waitRole(p.nodes[1], want)
	p.waitStreaming(p.nodes[0], sync)
	return p
}

// config is a node's Patroni configuration: failover at once when the
// leader's PostgreSQL crashes (primary_start_timeout 0), short loops.
func (p *patroni) config(n *patroniNode, etcdPort int, sync bool) string {
	return fmt.Sprintf(`scope: scan-test
name: %[1]s
log: {level: INFO}
restapi: {listen: "127.0.0.1:%[2]d", connect_address: "127.0.0.1:%[2]d"}
etcd3: {hosts: "127.0.0.1:%[3]d"}
bootstrap:
  dcs:
    ttl: 20
    loop_wait: 1
    retry_timeout: 5
    primary_start_timeout: 0
    synchronous_mode: %[4]t
    maximum_lag_on_failover: 1073741824
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters: {wal_level: replica, hot_standby: "on", max_wal_senders: 5, max_replication_slots: 5, wal_log_hints: "on", fsync: "on"}
  initdb: [{encoding: UTF8}, {locale: C}]
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: "127.0.0.1:%[5]d"
  connect_address: "127.0.0.1:%[5]d"
  data_dir: %[6]s
  bin_dir: %[7]s
  pgpass: %[6]s.pgpass
  authentication:
    superuser: {username: postgres, password: unused}
    replication: {username: replicator, password: unused}
    rewind: {username: postgres, password: unused}
  parameters: {unix_socket_directories: "%[8]s"}
`, n.name, n.apiPort, etcdPort, sync, n.pgPort, n.data, p.bin, p.dir)
}

func (p *patroni) write(path, text string) {
	p.t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		p.t.Fatal(err)
	}
	p.chown(path)
}

func (p *patroni) chown(path string) {
	p.t.Helper()
	if p.cred == nil {
		return
	}
	if err := os.Chown(path, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
		p.t.Fatal(err)
	}
}

// command is name run as the data's owner, in the cluster's directory.
func (p *patroni) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = p.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + p.dir, "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	return cmd
}

// daemon starts name in the background, its output in log.
func (p *patroni) daemon(log, name string, args ...string) *exec.Cmd {
	p.t.Helper()
	f, err := os.Create(filepath.Join(p.dir, log))
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close()
	cmd := p.command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	return cmd
}

func (p *patroni) startNode(n *patroniNode) {
	n.cmd = p.daemon(n.name+".log", "patroni", n.conf)
}

// stop ends what the cluster started: Patroni (which stops its
// PostgreSQL), whatever PostgreSQL is left, then etcd; the logs go to the
// test's output when it failed.
func (p *patroni) stop() {
	for _, n := range p.nodes {
		if n != nil && n.cmd != nil {
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, n := range p.nodes {
		if n == nil || n.cmd == nil {
			continue
		}
		done := make(chan struct{})
		go func() { _ = n.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = n.cmd.Process.Kill()
			<-done
		}
		_, _ = p.command(filepath.Join(p.bin, "pg_ctl"), "-D", n.data, "-w", "-t", "30", "stop", "-m", "immediate").CombinedOutput()
	}
	if p.etcd != nil {
		_ = p.etcd.Process.Kill()
		_ = p.etcd.Wait()
	}
	if p.t.Failed() {
		for _, log := range []string{"node1.log", "node2.log"} {
			b, _ := os.ReadFile(filepath.Join(p.dir, log))
			p.t.Logf("%s:\n%s", log, tail(string(b)))
		}
	}
	_ = os.RemoveAll(p.dir)
}

// dsn is the keyword DSN of node n's PostgreSQL over TCP (what a
// Service in front of the leader would give).
func (n *patroniNode) dsn() string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", n.pgPort)
}

// member is a node as Patroni's REST API lists it.
type member struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	State    string `json:"state"`
	Timeline int    `json:"timeline"`
}

// restClient asks Patroni's REST API; a node that does not answer within
// seconds is asked again on the next poll.
var restClient = &http.Client{Timeout: 3 * time.Second}

// members asks any node that answers for the cluster's members.
func (p *patroni) members() ([]member, error) {
	var err error
	for _, n := range p.nodes {
		var resp *http.Response
		resp, err = restClient.Get(fmt.Sprintf("http://127.0.0.1:%d/cluster", n.apiPort))
		if err != nil {
			continue
		}
		var c struct {
			Members []member `json:"members"`
		}
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err == nil {
			return c.Members, nil
		}
	}
	return nil, err
}

// until polls cond (a state that Patroni and PostgreSQL do not signal)
// until it holds, failing the test after two minutes.
func (p *patroni) until(what string, cond func() (bool, string)) {
	p.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("patroni: %s did not happen within 2 minutes: %s", what, state)
		}
		<-tick.C
	}
}

// waitRole waits until Patroni lists n running in role.
func (p *patroni) waitRole(n *patroniNode, role string) {
	p.t.Helper()
	p.until(n.name+" "+role, func() (bool, string) {
		ms, err := p.members()
		if err != nil {
			return false, err.Error()
		}
		for _, m := range ms {
			if m.Name == n.name && m.Role == role && (m.State == "running" || m.State == "streaming") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", ms)
	})
}

// waitStreaming waits until the leader n's PostgreSQL streams to a
// standby (in sync_state 'sync' when sync).
func (p *patroni) waitStreaming(n *patroniNode, sync bool) {
	p.t.Helper()
	want := "async"
	if sync {
		want = "sync"
	}
	p.until(n.name+" streaming to a standby in sync_state "+want, func() (bool, string) {
		var state string
		err := p.queryRow(n, `SELECT coalesce(string_agg(sync_state, ','), '') FROM pg_stat_replication WHERE state = 'streaming'`, &state)
		return err == nil && strings.Contains(state, want), fmt.Sprintf("%q, %v", state, err)
	})
}

func (p *patroni) queryRow(n *patroniNode, q string, dest ...any) error {
	db, err := sql.Open("postgres", n.dsn())
	if err != nil {
		return err
	}
	defer db.Close()
	return db.QueryRow(q).Scan(dest...)
}

// waitPrimary waits until n's PostgreSQL accepts writes.
func (p *patroni) waitPrimary(n *patroniNode) {
	p.t.Helper()
	p.until(n.name+" promoted", func() (bool, string) {
		var rec bool
		err := p.queryRow(n, `SELECT pg_is_in_recovery()`, &rec)
		return err == nil && !rec, fmt.Sprintf("in recovery %v, %v", rec, err)
	})
}

// switchover asks Patroni to hand the leadership from one node to the
// other (`patronictl switchover`), and waits for the new leader.
func (p *patroni) switchover(from, to *patroniNode) {
	p.t.Helper()
	out, err := p.command("patronictl", "-c", from.conf, "switchover", "--leader", from.name, "--candidate", to.name, "--force").CombinedOutput()
	if err != nil {
		p.t.Fatalf("patronictl switchover: %v\n%s", err, out)
	}
	p.waitRole(to, "leader")
	p.waitPrimary(to)
}

// postgresPids are the pids of n's postmaster and of its children.
func (n *patroniNode) postgresPids(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.data, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	pids := []int{pm}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range procs {
		stat, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: the comm may hold spaces.
		rest := string(stat)[strings.LastIndexByte(string(stat), ')')+1:]
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pm) {
			pid, _ := strconv.Atoi(strings.Fields(string(stat))[0])
			pids = append(pids, pid)
		}
	}
	return pids
}

// crash SIGKILLs n's PostgreSQL, postmaster and every child at once: a
// crash of the server, which Patroni on n answers with a failover.
func (n *patroniNode) crash(t *testing.T) {
	t.Helper()
	for _, pid := range n.postgresPids(t) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
			t.Fatal(err)
		}
	}
}
