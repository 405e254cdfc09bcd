package main

// The kill matrix: the real scan binary (built with -tags failpoint) runs
// as a child process against a real PostgreSQL schema and a real SMTP
// server, is killed with SIGKILL at each boundary of a pass, and is run
// again to completion. What the SMTP server received, per Message-ID,
// proves the guarantee: nothing twice, and every notice either sent or in
// quarantine. Boundaries are hit deterministically, by fail points inside
// the child or by the SMTP server's signal that a message arrived; never
// by a sleep.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"scan/internal/devpg"
	"scan/internal/ledger"
	"scan/internal/pgtest"
	"scan/internal/smtptest"
)

// Killed before the first claim commits: nothing was written, nothing
// sent; the rerun sends every notice once.
func TestKillBeforeClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, "")
	f.mustCrash("before-claim")
	if n := f.smtp.Total(); n != 0 {
		t.Fatalf("killed before the claim, yet %d messages went out", n)
	}
	if c := f.counts(); len(c) != 0 {
		t.Fatalf("killed before the claim, yet the ledger has %v", c)
	}
	s := f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("before-claim: received before rerun 0, after rerun %d; %v; rerun summary %+v", f.smtp.Total(), tl, s)
	if tl.sent != 100 || tl.quarantined != 0 || f.smtp.Total() != 100 {
		t.Fatalf("want every notice sent once: %v", tl)
	}
}

// Killed before the third batch's claim: the first two batches were
// claimed and (some of them) sent; whatever was in flight is quarantined,
// and the rerun sends the rest once.
func TestKillBeforeALaterClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, "")
	r := f.mustCrash("before-claim:3")
	before := f.check(false)
	// Claims are sized by what the sender can take, so the two batches'
	// sizes come from the crashed pass's own log.
	batches, claimed := 0, 0
	for _, l := range logLines(t, r.stderr) {
		if l["message"] == "batch claimed" {
			batches++
			claimed += int(l["claimed"].(float64))
		}
	}
	if c := f.counts(); batches != 2 || claimed <= 20 || c[ledger.Sent]+c[ledger.Claimed] != claimed {
		t.Fatalf("killed before the 3rd claim: want the 2 batches (%d lines, %d notices) claimed, got %v", batches, claimed, c)
	}
	f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("before-claim:3: before rerun %v; after rerun %v", before, tl)
	if tl.sent+tl.quarantined != 100 || tl.sent < 100-claimed {
		t.Fatalf("after the rerun: %v", tl)
	}
}

// Killed after the first batch's claim committed, before any of it was
// handed to the sender: that batch stays claimed (quarantine), nothing of
// it goes out, and the rerun sends the other 80 once and reports the
// quarantine.
func TestKillAfterClaimCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, "")
	f.mustCrash("after-claim-commit")
	if n := f.smtp.Total(); n != 0 {
		t.Fatalf("killed before the send, yet %d messages went out", n)
	}
	first := f.rows()
	if c := f.counts(); c[ledger.Claimed] != 20 || len(c) != 1 {
		t.Fatalf("want the first batch (20) claimed, got %v", c)
	}
	r := f.scan(f.env(), "run", "--batch-size", "20")
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, tail(r.stderr))
	}
	s := r.summary(t)
	tl := f.check(true)
	t.Logf("after-claim-commit: received before rerun 0, after rerun %d; %v; rerun summary %+v", f.smtp.Total(), tl, s)
	if tl.sent != 80 || tl.quarantined != 20 || tl.quarantinedDelivered != 0 || f.smtp.Total() != 80 {
		t.Fatalf("want 80 sent once and the first batch quarantined, unsent: %v", tl)
	}
	for id, r := range f.rows() {
		if first[id].State == ledger.Claimed && r.State != ledger.Claimed {
			t.Errorf("%s: quarantined claim became %s without reconcile or resolve", id, r.State)
		}
	}
	if s.Minted != 80 || s.Suppressed != 20 || s.Quarantine != 20 || s.QuarantineSince == nil {
		t.Fatalf("rerun summary = %+v; want minted 80, suppressed 20, quarantine 20 since the crash", s)
	}
	if !logHas(r.stderr, "quarantine", float64(20)) || !logHas(r.stderr, "quarantine_since", nil) {
		t.Errorf("the rerun's log does not say how many are quarantined and since when:\n%s", tail(r.stderr))
	}

	// The operator sees them, oldest first, as JSON lines.
	q := f.scan(f.env(), "quarantine", "--older-than", "0s")
	if q.code != 0 {
		t.Fatalf("quarantine: exit %d\n%s", q.code, q.stderr)
	}
	var listed int
	for _, line := range strings.Split(strings.TrimSpace(q.stdout), "\n") {
		var row ledger.Row
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("quarantine line %q: %v", line, err)
		}
		if row.State != ledger.Claimed || first[row.SubscriptionID].State != ledger.Claimed {
			t.Errorf("quarantine lists %s (%s)", row.SubscriptionID, row.State)
		}
		listed++
	}
	if listed != 20 {
		t.Fatalf("quarantine listed %d, want 20", listed)
	}
}

// Killed when the provider accepted the first message, before its outcome
// was written: every message already handed over stays claimed and is not
// resent; reconcile with the provider's delivered events settles them as
// sent.
func TestKillAfterAccepted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, "")
	f.mustCrash("after-accepted")
	delivered := f.received()
	c := f.counts()
	if len(delivered) == 0 || c[ledger.Sent] != 0 {
		t.Fatalf("killed at the first acceptance: received %d, ledger %v", len(delivered), c)
	}
	for id := range delivered {
		if st := f.stateByMsg(id); st != ledger.Claimed {
			t.Fatalf("%s accepted before the crash, state %s, want claimed", id, st)
		}
	}
	receivedBefore := f.smtp.Total()
	s := f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("after-accepted: received before rerun %d, after rerun %d; %v; rerun summary %+v", receivedBefore, f.smtp.Total(), tl, s)
	if tl.quarantinedDelivered != len(delivered) || tl.sent+tl.quarantined != 100 {
		t.Fatalf("want the %d accepted quarantined, not resent: %v", len(delivered), tl)
	}

	// The provider's events settle them: delivered (with and without
	// angle brackets), plus noise that must be counted, never fatal.
	var events strings.Builder
	i := 0
	for id := range delivered {
		if i%2 == 0 {
			id = "<" + id + ">"
		}
		fmt.Fprintf(&events, `{"message_id":%q,"event":"delivered","timestamp":"2026-11-30T02:00:01Z"}`+"\n", id)
		i++
	}
	events.WriteString(`{"message_id":"<ffffffffffffffffffffffffffffffff@n.example.com>","event":"delivered"}` + "\n")
	events.WriteString("not json\n")
	r := f.reconcile(events.String())
	if r.code != 0 {
		t.Fatalf("reconcile: exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	if sum["settled"] != float64(len(delivered)) || sum["unknown_message_id"] != float64(1) || sum["malformed"] != float64(1) {
		t.Fatalf("reconcile summary = %v (want %d settled, 1 unknown, 1 malformed)", sum, len(delivered))
	}
	if len(lines)-1 != len(delivered) {
		t.Fatalf("reconcile printed %d changes, want %d:\n%s", len(lines)-1, len(delivered), r.stdout)
	}
	after := f.check(true)
	if after.quarantinedDelivered != 0 || after.sent != tl.sent+len(delivered) {
		t.Fatalf("after reconcile: %v (before %v)", after, tl)
	}
	t.Logf("after-accepted: after reconcile %v", after)
}

// Killed right after the first outcome batch committed: what was recorded
// stays sent, what was in flight stays quarantined, nothing is resent.
func TestKillAfterOutcomeCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 300, "")
	f.mustCrash("after-outcome-commit")
	before := f.check(false)
	if before.sent == 0 {
		t.Fatalf("killed after the outcome commit, yet nothing is recorded sent: %v", before)
	}
	f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("after-outcome-commit: before rerun %v; after rerun %v", before, tl)
	if tl.sent+tl.quarantined != 300 || tl.sent < before.sent {
		t.Fatalf("after the rerun: %v", tl)
	}
	// A third pass has nothing to do.
	total := f.smtp.Total()
	if s := f.mustRun(f.env()); s.Minted != 0 || f.smtp.Total() != total {
		t.Fatalf("third pass sent again: %+v", s)
	}
}

// Twenty passes in a row, each killed when the SMTP server has read a
// random k-th message of that pass (from the server's own goroutine,
// before it replies), then one pass to completion.
func TestKillAtRandomMoments(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SCAN_KILL_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (set SCAN_KILL_SEED to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	// Each killed pass consumes at most its k sends, the sends in flight
	// and the claims queued ahead of the sender (about 5 batches of 10).
	f := newFixture(t, 2000, "")
	for i := range 20 {
		k := int64(1 + rng.IntN(20))
		f.killAtMessage(i+1, k, f.env(), "run", "--batch-size", "10")
		f.check(false)
		if t.Failed() {
			t.Fatalf("after kill %d (k=%d)", i+1, k)
		}
	}
	before := f.check(false)
	s := f.mustRun(f.env(), "--batch-size", "10")
	tl := f.check(true)
	t.Logf("20 random kills: before the last pass %v; after it %v; last summary %+v", before, tl, s)
	if tl.sent+tl.quarantined != 2000 || s.Quarantine != tl.quarantined {
		t.Fatalf("after the final pass: %v, summary %+v", tl, s)
	}
}

// The database stops in the middle of a pass (a real server, shut down
// like `pg_ctl stop -m fast`): the pass aborts with exit 1, the outcomes
// it could not record stay in quarantine, and after the server is back
// the rerun sends the rest with nothing twice.
func TestDatabaseRestartMidPass(t *testing.T) {
	t.Parallel()
	srv, err := devpg.Start(context.Background(), devpg.Config{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	f := newFixture(t, 300, srv.DSN())
	pgctl := func(args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(srv.BinDir(), "pg_ctl"), append([]string{"-D", filepath.Join(srv.Dir(), "data"), "-w", "-t", "120"}, args...)...)
		cmd.Env = append(os.Environ(), "LANG=C", "LC_ALL=C")
		if os.Geteuid() == 0 { // the server runs as the owner of its data
			fi, err := os.Stat(filepath.Join(srv.Dir(), "data"))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: st.Uid, Gid: st.Gid}}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pg_ctl %v: %v\n%s", args, err, out)
		}
	}

	// From the 25th message on, the SMTP server holds its replies until
	// the database is down, so the pass cannot finish before it is.
	stopNow, down := make(chan struct{}), make(chan struct{})
	var once, downOnce sync.Once
	var seen atomic.Int64
	f.onMessage(func(smtptest.Received) {
		if seen.Add(1) >= 25 {
			once.Do(func() { close(stopNow) })
			<-down
		}
	})
	release := func() { downOnce.Do(func() { close(down) }) }
	defer release()
	c := f.start(f.env(), "run", "--batch-size", "20")
	select {
	case <-stopNow:
	case <-time.After(2 * time.Minute):
		c.kill()
		t.Fatalf("the pass did not reach its 25th message\n%s", tail(c.wait().stderr))
	}
	f.db.Close() // our own connections would only be broken
	pgctl("stop", "-m", "fast")
	release()
	r := c.wait()
	f.onMessage(nil)
	stoppedAt := f.smtp.Total()
	if r.code != 1 {
		t.Fatalf("database lost mid-pass: exit %d (killed %v), want 1\n%s", r.code, r.killed, tail(r.stderr))
	}
	pgctl("start", "-l", filepath.Join(srv.Dir(), "restart.log"))
	t.Cleanup(func() { pgctl("stop", "-m", "fast") })
	f.db = pgtest.Open(t, srv.DSN())
	before := f.check(false)
	s := f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("database restart: received when stopped %d, before rerun %v; after rerun %v; rerun summary %+v", stoppedAt, before, tl, s)
	if tl.sent+tl.quarantined != 300 || s.Minted == 0 {
		t.Fatalf("after the restart: %v, summary %+v", tl, s)
	}
}

// The SMTP server dies in the middle of a pass: its connections are cut
// (the message being answered becomes an unknown outcome: quarantine) and
// new ones refused (nothing sent: retry). Once a notice is still refused
// after the in-pass retries the provider is unreachable: the pass aborts
// with exit 1 (safe to run again) instead of turning every claim into a
// retry. The rerun, against a server that works again, sends the retries
// once and leaves the quarantine alone.
func TestSMTPServerDiesMidPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200, "")
	p := newProxy(t, f.smtp.Addr())
	var seen atomic.Int64
	f.onMessage(func(smtptest.Received) {
		if seen.Add(1) == 30 {
			p.die()
		}
	})
	r := f.scan(f.env("SMTP_URL=smtp://"+p.addr()), "run", "--batch-size", "20")
	f.onMessage(nil)
	if r.code != 1 {
		t.Fatalf("SMTP server lost: exit %d, want 1 (killed %v)\n%s", r.code, r.killed, tail(r.stderr))
	}
	before := f.check(false)
	c := f.counts()
	if c[ledger.Failed] != 0 || c[ledger.Retry]+c[ledger.Claimed] == 0 {
		t.Fatalf("SMTP server lost: ledger %v, want retry and quarantine, no failed", c)
	}
	if c[ledger.Claimed] == 0 {
		t.Errorf("the message whose reply was cut off is not in quarantine: %v", c)
	}
	s := f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("SMTP death: exit %d, before rerun %v (ledger %v), summary %+v; after rerun %v; rerun summary %+v", r.code, before, c, r.summary(t), tl, s)
	if tl.sent+tl.quarantined != 200 || s.Retried != c[ledger.Retry] {
		t.Fatalf("after the rerun: %v, summary %+v (retry before %d)", tl, s, c[ledger.Retry])
	}
}

// Two to eight passes started at once: each notice is claimed by one of
// them and received once.
func TestConcurrentPasses(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 5, 8} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 400, "")
			children := make([]*child, n)
			for i := range children {
				children[i] = f.start(f.env(), "run", "--batch-size", "20")
			}
			minted, sent := 0, 0
			for i, c := range children {
				r := c.wait()
				if r.code != 0 {
					t.Fatalf("pass %d: exit %d\n%s", i, r.code, tail(r.stderr))
				}
				s := r.summary(t)
				minted += s.Minted
				sent += s.Sent
			}
			tl := f.check(true)
			t.Logf("%d concurrent passes: minted %d, sent %d; %v", n, minted, sent, tl)
			if minted != 400 || sent != 400 || tl.sent != 400 || f.smtp.Total() != 400 {
				t.Fatalf("want each of 400 notices minted, sent and received once: minted %d sent %d %v", minted, sent, tl)
			}
		})
	}
}

// reconcile runs `scan reconcile --events -` with events on stdin.
func (f *fixture) reconcile(events string) result {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, scanBinary(f.t), "reconcile", "--events", "-")
	cmd.Env = f.env()
	cmd.Stdin = strings.NewReader(events)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

func (f *fixture) stateByMsg(msgID string) ledger.State {
	f.t.Helper()
	for _, r := range f.rows() {
		if r.MessageID != nil && *r.MessageID == msgID {
			return r.State
		}
	}
	return ""
}

// logHas reports whether some JSON log line has field set (to want, when
// want is not nil).
func logHas(stderr, field string, want any) bool {
	for _, line := range strings.Split(stderr, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if v, ok := m[field]; ok && (want == nil || v == want) {
			return true
		}
	}
	return false
}

// proxy forwards TCP connections to an SMTP server until die, which
// closes its listener and every connection at once: to the client, the
// server is gone.
type proxy struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func newProxy(t *testing.T, to string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, to: to}
	go p.serve()
	t.Cleanup(p.die)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.dead {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

func (p *proxy) die() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return
	}
	p.dead = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// killAtMessage runs scan with args and kills it (SIGKILL) when the SMTP
// server has read the k-th message of this pass, from the server's own
// goroutine before it replies; pass numbers it in failures.
func (f *fixture) killAtMessage(pass int, k int64, env []string, args ...string) result {
	f.t.Helper()
	c := f.start(env, args...)
	var seen atomic.Int64
	f.onMessage(func(smtptest.Received) {
		if seen.Add(1) == k {
			c.kill()
		}
	})
	r := c.wait()
	f.onMessage(nil)
	if !r.killed {
		f.t.Fatalf("pass %d was not killed at message %d (exit %d, %d received):\n%s", pass, k, r.code, seen.Load(), tail(r.stderr))
	}
	return r
}
