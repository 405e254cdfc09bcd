package main

// Issue 29: the ledger keeps its word through the database's own
// failures. Real clusters (cluster_test.go), the real binary, a real SMTP
// server; what the SMTP server received, per Message-ID, is the proof.

import (
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"scan/internal/pgtest"
	"scan/internal/reconcile"
	"scan/internal/smtptest"
)

// walSyncs is the server's count of WAL fsyncs (pg_stat_wal).
func (c *cluster) walSyncs() int {
	c.t.Helper()
	n, err := strconv.Atoi(c.query(`SELECT wal_sync::text FROM pg_stat_wal`))
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// A server whose default is synchronous_commit = off (ALTER SYSTEM, the
// WAL writer flushing every 2s): each claim statement still waits for its
// flush (pg_stat_wal.wal_sync rises with the claim batches), and crashes
// of the server (`pg_ctl stop -m immediate`) at random moments of passes
// lose no claim whose notice went out: over every round, nothing twice.
func TestClaimsSurviveCrashesOfAnAsyncServer(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.configure("synchronous_commit = off", "wal_writer_delay = '2s'")
	f := newFixture(t, 100, c.dsn)

	before := c.walSyncs()
	// A backend reports its WAL flushes when idle (at most once a second)
	// or as it exits, after its client has gone: the pass connects under
	// a name of its own, and the count is read once none of it is left.
	const app = "scan-first-pass"
	r := f.scan(append(f.env(), "DATABASE_URL="+withParam(t, f.dsn, "application_name", app)), "run", "--batch-size", "20")
	if r.code != 0 {
		t.Fatalf("first pass: exit %d\n%s", r.code, tail(r.stderr))
	}
	batches := strings.Count(r.stderr, `"batch claimed"`)
	f.settle(app)
	if syncs := c.walSyncs() - before; batches < 5 || syncs < batches {
		t.Fatalf("%d claim batches, but the WAL was flushed %d times: the claims did not wait for their flush", batches, syncs)
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 29))
	for round := range 4 {
		f.add(120)
		k := int64(1 + rng.IntN(100))
		crashAt, down := make(chan struct{}), make(chan struct{})
		var once, downOnce sync.Once
		var seen atomic.Int64
		f.onMessage(func(smtptest.Received) {
			if seen.Add(1) == k {
				once.Do(func() { close(crashAt) })
				<-down // the reply waits for the crash: the pass cannot finish first
			}
		})
		release := func() { downOnce.Do(func() { close(down) }) }
		ch := f.start(f.env(), "run", "--batch-size", "20")
		select {
		case <-crashAt:
		case <-time.After(2 * time.Minute):
			ch.kill()
			release()
			t.Fatalf("round %d: the pass did not reach message %d\n%s", round, k, tail(ch.wait().stderr))
		}
		f.db.Close()
		c.crash()
		release()
		res := ch.wait()
		f.onMessage(nil)
		if res.code != 1 {
			t.Fatalf("round %d: database crashed mid-pass: exit %d, want 1\n%s", round, res.code, tail(res.stderr))
		}
		c.start()
		f.db = pgtest.Open(t, c.dsn)
		t.Logf("round %d: crashed at message %d; %v", round, k, f.check(false))
	}
	s := f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("after 4 crashes: %v; last summary %+v", tl, s)
	if tl.sent+tl.quarantined != f.subs {
		t.Fatalf("want every notice sent once or in quarantine: %v of %d", tl, f.subs)
	}
}

// deliveredEvents is the provider's record of every message the SMTP
// server received, as jsonl events (what a provider's event archive
// holds).
func (f *fixture) deliveredEvents() string {
	var b strings.Builder
	for _, m := range f.smtp.Messages() {
		line, _ := json.Marshal(map[string]any{"message_id": "<" + m.MessageID + ">", "event": "delivered"})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// recoverFrom runs `scan recover` with args and the provider's record on
// stdin, and decodes its report.
func (f *fixture) recoverFrom(events string, args ...string) reconcile.RecoverReport {
	f.t.Helper()
	path := filepath.Join(f.t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(events), 0o644); err != nil {
		f.t.Fatal(err)
	}
	r := f.scan(f.env(), append([]string{"recover", "--events", path}, args...)...)
	if r.code != 0 {
		f.t.Fatalf("scan recover: exit %d\n%s", r.code, tail(r.stderr))
	}
	var rep reconcile.RecoverReport
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &rep); err != nil {
		f.t.Fatalf("scan recover printed %q: %v", r.stdout, err)
	}
	return rep
}

// wantRefused runs a pass that must refuse with exit 4, naming scan
// recover, and send nothing.
func (f *fixture) wantRefused(what string) {
	f.t.Helper()
	before := f.smtp.Total()
	r := f.scan(f.env(), "run", "--batch-size", "20")
	if r.code != exitRestored || !strings.Contains(r.stderr, "scan recover") || f.smtp.Total() != before {
		f.t.Fatalf("%s: exit %d, %d sent (want 4 and none)\n%s", what, r.code, f.smtp.Total()-before, tail(r.stderr))
	}
	if n := f.ledgerClaimedBy(); n != 0 {
		f.t.Fatalf("%s: the refused pass claimed %d", what, n)
	}
}

// ledgerClaimedBy counts rows in state claimed (a refused pass claims none).
func (f *fixture) ledgerClaimedBy() int {
	f.t.Helper()
	var n int
	if err := f.db.Get(&n, `SELECT count(*) FROM notice_ledger WHERE state = 'claimed'`); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// pitr takes a base backup of c (WAL archived since), lets fn write what
// the restore will lose after a named restore point, then restores the
// backup to that point and promotes it, as an operator's point-in-time
// recovery does. It returns the restore point's time.
func (c *cluster) pitr(fn func()) time.Time {
	c.t.Helper()
	backup := filepath.Join(c.dir, "backup")
	if out, err := c.tool("pg_basebackup", "-h", c.dir, "-p", "5432", "-U", "postgres", "-D", backup, "-X", "fetch", "--no-sync"); err != nil {
		c.t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	at, err := time.Parse(time.RFC3339Nano, c.query(`SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') FROM (SELECT pg_create_restore_point('before')) p`))
	if err != nil {
		c.t.Fatal(err)
	}
	fn()
	c.archiveUpTo()
	c.crash()
	if err := os.Rename(c.data(), c.data()+".lost"); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(backup, c.data()); err != nil {
		c.t.Fatal(err)
	}
	c.touch(filepath.Join(c.data(), "recovery.signal"))
	c.confLines(c.data(),
		"restore_command = "+quoteLit("cp "+filepath.Join(c.dir, "archive")+"/%f %p"),
		"recovery_target_name = 'before'",
		"recovery_target_action = 'promote'")
	c.start()
	c.waitPrimary(c.dsn)
	return at
}

// newArchivingCluster is a durable server archiving its WAL.
func newArchivingCluster(t *testing.T) *cluster {
	c := newCluster(t)
	arch := c.mkdir("archive")
	c.configure("archive_mode = on", "archive_command = "+quoteLit("cp %p "+arch+"/%f"))
	return c
}

// PITR: a pass, a base backup, a second pass, then a point-in-time
// recovery to before the second pass and its promotion. The next pass
// refuses (exit 4) and sends nothing; `scan recover` from the provider's
// record records what the second pass sent; then nothing goes out twice,
// and the notices due since go out.
func TestPITRRefusesThenRecoversFromTheProvidersRecord(t *testing.T) {
	t.Parallel()
	c := newArchivingCluster(t)
	f := newFixture(t, 40, c.dsn)
	f.mustRun(f.env())
	f.add(30) // due now; the second pass sends them
	since := c.pitr(func() {
		f.mustRun(f.env()) // what the restore loses
	})
	f.db = pgtest.Open(t, c.dsn)
	if n := f.counts(); n["sent"] != 40 {
		t.Fatalf("after the restore the ledger holds %v, want the first pass's 40 only", n)
	}
	f.add(10) // due since the restore
	f.wantRefused("after PITR")
	rep := f.recoverFrom(f.deliveredEvents(), "--since", since.Format(time.RFC3339))
	if rep.Recorded != 30 || rep.AlreadyKnown != 40 || rep.Epoch == nil {
		t.Fatalf("recover: %+v, want 30 recorded, 40 already known", rep)
	}
	s := f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("PITR: recover %+v; pass after %+v; %v", rep, s, tl)
	if s.Minted != 10 || s.Witnessed != 30 || tl.sent != 80 || f.smtp.Total() != 80 {
		t.Fatalf("after recover: summary %+v, %v", s, tl)
	}
}

// Restore with the record arriving late: after the PITR the operator
// acknowledges with --none-lost (no record yet); the provider's events of
// the lost pass arrive (scan reconcile, as the receiver or the SQS drain
// would apply them) before the pass that would re-send: the second witness
// records them sent, and nothing goes out twice.
func TestLateRecordAfterRestoreIsTheSecondWitness(t *testing.T) {
	t.Parallel()
	c := newArchivingCluster(t)
	f := newFixture(t, 20, c.dsn)
	f.mustRun(f.env())
	f.add(25)
	c.pitr(func() { f.mustRun(f.env()) })
	f.db = pgtest.Open(t, c.dsn)
	f.wantRefused("after PITR")
	if r := f.scan(f.env(), "recover", "--none-lost"); r.code != exitUsage || !strings.Contains(r.stderr, "--reason") {
		t.Fatalf("--none-lost without a reason: exit %d\n%s", r.code, tail(r.stderr))
	}
	if r := f.scan(f.env(), "recover", "--none-lost", "--reason", "no provider record yet", "--by", "ops"); r.code != 0 {
		t.Fatalf("recover --none-lost: exit %d\n%s", r.code, tail(r.stderr))
	}
	if r := f.reconcile(f.deliveredEvents()); r.code != 0 || !strings.Contains(r.stdout, `"kept_unknown":25`) {
		t.Fatalf("late events: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr))
	}
	s := f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("late record: %+v; %v", s, tl)
	if s.Minted != 0 || s.Witnessed != 25 || f.smtp.Total() != 45 {
		t.Fatalf("after the late record: summary %+v, %v", s, tl)
	}
}

// standby makes a streaming standby of c (pg_basebackup -R) in its own
// directory, started and caught up with c, and returns its DSN, its data
// directory and its walreceiver's pid.
func (c *cluster) standby() (dsn, data string, walreceiver int) {
	c.t.Helper()
	dir := c.mkdir("standby")
	data = filepath.Join(dir, "data")
	if out, err := c.tool("pg_basebackup", "-h", c.dir, "-p", "5432", "-U", "postgres", "-D", data, "-R", "-X", "stream", "--no-sync"); err != nil {
		c.t.Fatalf("pg_basebackup -R: %v\n%s", err, out)
	}
	c.confLines(data, "unix_socket_directories = "+quoteLit(dir))
	c.pgctlOn(data, "start", "-l", filepath.Join(dir, "standby.log"))
	c.t.Cleanup(func() { _, _ = c.tool("pg_ctl", "-D", data, "-w", "-t", "60", "stop", "-m", "immediate") })
	dsn = strings.Replace(c.dsn, "host="+c.dir, "host="+dir, 1)
	sb := &cluster{t: c.t, srv: c.srv, dir: dir, dsn: dsn, cred: c.cred}
	c.caughtUp(sb)
	pid, err := strconv.Atoi(sb.query(`SELECT pid::text FROM pg_stat_wal_receiver`))
	if err != nil {
		c.t.Fatal(err)
	}
	return dsn, data, pid
}

// caughtUp waits, with a deadline, until the standby sb has replayed
// everything c has written so far.
func (c *cluster) caughtUp(sb *cluster) {
	c.t.Helper()
	lsn := c.query(`SELECT pg_current_wal_lsn()::text`)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		db, err := sql.Open("postgres", sb.dsn)
		if err == nil {
			var ok bool
			err = db.QueryRow(`SELECT COALESCE(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)
				AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming')`, lsn).Scan(&ok)
			db.Close()
			if err == nil && ok {
				return
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the standby did not replay up to %s: %v", lsn, err)
		}
		time.Sleep(20 * time.Millisecond) // polls the standby's own progress
	}
}

// Failover to an asynchronous standby: the standby, caught up with the
// subscriptions, is kept behind (its walreceiver stopped with SIGSTOP)
// while a pass sends; the primary dies and the standby is promoted. The
// pass warned that every standby is asynchronous; the next pass, on the
// promoted standby, refuses (exit 4) and sends nothing; `scan recover`
// from the provider's record follows; then nothing goes out twice and the
// notices due since go out.
func TestFailoverToAnAsyncStandbyRefusesThenRecovers(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	f := newFixture(t, 20, c.dsn)
	f.mustRun(f.env())
	f.add(25)
	sbDSN, sbData, walreceiver := c.standby()
	if err := syscall.Kill(walreceiver, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	since := time.Now().UTC().Truncate(time.Second)
	r := f.scan(f.env(), "run", "--batch-size", "20")
	if r.code != 0 || !strings.Contains(r.stderr, "asynchronous standbys") {
		t.Fatalf("pass on the primary: exit %d, want 0 and a warning about the asynchronous standby\n%s", r.code, tail(r.stderr))
	}
	f.db.Close()
	c.crash()
	// What the stopped walreceiver holds unread dies with it. The
	// standby's postmaster restarts its processes (a child was killed);
	// a promotion asked for before it is back in recovery would be lost.
	if err := syscall.Kill(walreceiver, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.waitRestarted(sbDSN, walreceiver)
	c.pgctlOn(sbData, "promote")
	c.waitPrimary(sbDSN)
	f.dsn = sbDSN
	f.db = pgtest.Open(t, sbDSN)
	if n := f.counts(); n["sent"] != 20 {
		t.Fatalf("the promoted standby holds %v, want the first pass's 20 only", n)
	}
	f.add(5) // due since the failover
	f.wantRefused("after the failover")
	rep := f.recoverFrom(f.deliveredEvents(), "--since", since.Format(time.RFC3339))
	if rep.Recorded != 25 || rep.AlreadyKnown != 20 {
		t.Fatalf("recover: %+v, want 25 recorded, 20 already known", rep)
	}
	s := f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("failover: recover %+v; pass after %+v; %v", rep, s, tl)
	if s.Minted != 5 || s.Witnessed != 25 || f.smtp.Total() != 50 {
		t.Fatalf("after recover: summary %+v, %v", s, tl)
	}
}
