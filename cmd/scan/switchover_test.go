package main

// Issue 38: a switchover is a non-event; a lossy failover still refuses.
// A real Patroni cluster (patroni_test.go), the real binary, a real SMTP
// server: what the SMTP server received, per Message-ID, is the proof.

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"scan/internal/pgtest"
	"scan/internal/smtptest"
)

// onLeader points the fixture (its DATABASE_URL and its own connection)
// at node n, as a Service in front of the leader would.
func (f *fixture) onLeader(n *patroniNode) {
	f.t.Helper()
	_ = f.db.Close()
	f.dsn = n.dsn()
	f.db = pgtest.Open(f.t, f.dsn)
}

// `patronictl switchover` between two passes, under synchronous_mode:
// the next pass, on the new leader, logs the switchover and goes on
// (exit 0); every notice arrives once.
func TestPatroniSwitchoverIsANonEvent(t *testing.T) {
	p := newPatroni(t, true)
	f := newFixture(t, 20, p.nodes[0].dsn())
	f.mustRun(f.env())
	f.add(20)
	p.switchover(p.nodes[0], p.nodes[1])
	f.onLeader(p.nodes[1])
	r := f.scan(f.env(), "run", "--batch-size", "20")
	if r.code != 0 || !strings.Contains(r.stderr, "switched over") {
		t.Fatalf("the pass after the switchover: exit %d, want 0 and a line naming the switchover\n%s", r.code, tail(r.stderr))
	}
	tl := f.check(true)
	if tl.sent != 40 || f.smtp.Total() != 40 {
		t.Fatalf("after the switchover: %v, %d received; want 40 sent once each", tl, f.smtp.Total())
	}
	var kind string
	if err := f.db.Get(&kind, `SELECT kind FROM notice_ledger_epoch ORDER BY id DESC LIMIT 1`); err != nil || kind != "switchover" {
		t.Fatalf("the last epoch is %q (%v), want the switchover's", kind, err)
	}
	// And the pass after it finds the timeline it recorded.
	f.add(5)
	if s := f.mustRun(f.env()); s.Minted != 5 {
		t.Fatalf("the pass after: %+v", s)
	}
	f.check(true)
}

// SIGKILL of the leader's PostgreSQL (postmaster and every child) in
// mid-pass, under synchronous_mode: the pass exits 1; Patroni fails over
// to the synchronous standby, which acknowledged every claim before its
// notice went out; the next pass, on the new leader, goes on (exit 0) and
// nothing arrives twice (the message in flight at the crash waits in
// quarantine).
func TestPatroniFailoverMidPassSendsNothingTwice(t *testing.T) {
	p := newPatroni(t, true)
	f := newFixture(t, 20, p.nodes[0].dsn())
	f.mustRun(f.env())
	f.add(60)
	crashAt, down := make(chan struct{}), make(chan struct{})
	var once, downOnce sync.Once
	var seen atomic.Int64
	f.onMessage(func(smtptest.Received) {
		if seen.Add(1) == 15 {
			once.Do(func() { close(crashAt) })
			<-down // the reply waits for the crash: the pass cannot finish first
		}
	})
	release := func() { downOnce.Do(func() { close(down) }) }
	defer release()
	ch := f.start(f.env(), "run", "--batch-size", "20")
	select {
	case <-crashAt:
	case <-time.After(2 * time.Minute):
		ch.kill()
		release()
		t.Fatalf("the pass did not reach message 15\n%s", tail(ch.wait().stderr))
	}
	_ = f.db.Close()
	p.nodes[0].crash(t)
	release()
	res := ch.wait()
	f.onMessage(nil)
	if res.code != 1 {
		t.Fatalf("the leader crashed mid-pass: exit %d, want 1\n%s", res.code, tail(res.stderr))
	}
	p.waitRole(p.nodes[1], "leader")
	p.waitPrimary(p.nodes[1])
	f.onLeader(p.nodes[1])
	r := f.scan(f.env(), "run", "--batch-size", "20")
	if r.code != 0 || !strings.Contains(r.stderr, "switched over") {
		t.Fatalf("the pass after the failover: exit %d, want 0 and a line naming the switchover\n%s", r.code, tail(r.stderr))
	}
	tl := f.check(true)
	t.Logf("failover mid-pass: %v", tl)
	if tl.sent+tl.quarantined != f.subs || tl.received != tl.sent+tl.quarantinedDelivered {
		t.Fatalf("after the failover: %v of %d; want each sent once or in quarantine", tl, f.subs)
	}
}

// An asynchronous replica (synchronous_mode off) held back, its
// walreceiver stopped (SIGSTOP), while a pass sends; the leader's
// PostgreSQL dies and Patroni fails over to the replica, which never got
// those claims. The next pass refuses (exit 4), naming why; `scan
// recover` from the provider's record; then nothing goes out twice.
func TestPatroniLossyFailoverRefusesThenRecovers(t *testing.T) {
	p := newPatroni(t, false)
	f := newFixture(t, 20, p.nodes[0].dsn())
	f.mustRun(f.env())
	f.add(25)
	// Only the pass's claims are to be lost: the 25 subscriptions (the
	// source relation lives in the ledger's database) must reach the
	// replica first. It is asynchronous, so wait until it has replayed
	// the leader's WAL past the insert; else, under load, the failover
	// loses the subscriptions too, and the pass after recover neither
	// mints nor witnesses their notices (rows 21-45 missing).
	p.waitReplayed(f, p.nodes[1])
	var walreceiver int
	if err := p.queryRow(p.nodes[1], `SELECT pid FROM pg_stat_wal_receiver`, &walreceiver); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(walreceiver, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	since := time.Now().UTC().Truncate(time.Second)
	if s := f.mustRun(f.env()); s.Sent != 25 {
		t.Fatalf("the pass on the leader: %+v", s)
	}
	_ = f.db.Close()
	p.nodes[0].crash(t)
	// What the stopped walreceiver holds unread dies with it.
	if err := syscall.Kill(walreceiver, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.waitRole(p.nodes[1], "leader")
	p.waitPrimary(p.nodes[1])
	f.onLeader(p.nodes[1])
	if n := f.counts(); n["sent"] != 20 {
		t.Fatalf("the promoted replica holds %v, want the first pass's 20 only", n)
	}
	var subs int
	if err := f.db.Get(&subs, `SELECT count(*) FROM subscriptions`); err != nil || subs != 45 {
		t.Fatalf("the promoted replica holds %d subscriptions (%v), want 45", subs, err)
	}
	f.add(5) // due since the failover
	r := f.scan(f.env(), "run", "--batch-size", "20")
	if r.code != exitRestored || !strings.Contains(r.stderr, "not a lossless switchover") || !strings.Contains(r.stderr, "sync_state") {
		t.Fatalf("after the lossy failover: exit %d, want 4 naming why\n%s", r.code, tail(r.stderr))
	}
	if f.smtp.Total() != 45 || f.ledgerClaimedBy() != 0 {
		t.Fatalf("the refused pass sent %d or claimed %d", f.smtp.Total()-45, f.ledgerClaimedBy())
	}
	rep := f.recoverFrom(f.deliveredEvents(), "--since", since.Format(time.RFC3339))
	if rep.Recorded != 25 || rep.AlreadyKnown != 20 {
		t.Fatalf("recover: %+v, want 25 recorded, 20 already known", rep)
	}
	s := f.mustRun(f.env())
	tl := f.check(true)
	t.Logf("lossy failover: recover %+v; pass after %+v; %v", rep, s, tl)
	if s.Minted != 5 || s.Witnessed != 25 || f.smtp.Total() != 50 {
		t.Fatalf("after recover: summary %+v, %v", s, tl)
	}
}

// waitReplayed waits until the replica n has replayed the WAL the leader
// (f's database) has written so far.
func (p *patroni) waitReplayed(f *fixture, n *patroniNode) {
	p.t.Helper()
	var lsn string
	if err := f.db.Get(&lsn, `SELECT pg_current_wal_lsn()::text`); err != nil {
		p.t.Fatal(err)
	}
	p.until(n.name+" replayed the leader's WAL to "+lsn, func() (bool, string) {
		var replayed string
		var done bool
		err := p.queryRow(n, fmt.Sprintf(`SELECT coalesce(pg_last_wal_replay_lsn()::text, ''), coalesce(pg_last_wal_replay_lsn() >= '%s'::pg_lsn, false)`, lsn), &replayed, &done)
		return err == nil && done, fmt.Sprintf("replayed %q, %v", replayed, err)
	})
}
