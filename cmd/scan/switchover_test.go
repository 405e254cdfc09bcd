package main

// Issue 38: a switchover is a non-event; a lossy failover still refuses.
// A real Patroni cluster (patroni_test.go), the real binary, a real SMTP
// server: what the SMTP server received, per Message-ID, is the proof.

import (
	"strings"
	"testing"

	"scan/internal/pgtest"
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
