package ledger

import (
	"strings"
	"testing"
)

// A history file as PostgreSQL writes it after two promotions (blank
// lines between the entries), and the judgement of a new timeline
// against the last epoch's witness: only a promotion straight from the
// last pass's timeline, at or after its position, of the same cluster,
// after a pass that claimed under a synchronous standby with
// synchronous_commit on, is a switchover; every other case says why not.
func TestJudgeHistory(t *testing.T) {
	const history = "1\t0/30001B0\tno recovery target specified\n\n2\t0/30002F0\tno recovery target specified\n"
	es, err := parseHistory(history)
	if err != nil || len(es) != 2 || es[1].Parent != 2 || es[1].Switch != 0x30002F0 || es[1].Reason != promotionReason {
		t.Fatalf("parseHistory: %+v, %v", es, err)
	}
	one, on, sys := 1, "on", "7714546798246699917"
	last := func(tl int64, lsn string, sync *int, commit *string) Epoch {
		return Epoch{Kind: EpochPass, RunID: "run-1", Timeline: &tl, LSN: &lsn,
			Witness: Witness{SyncStandbys: sync, SyncCommit: commit, SystemID: &sys}}
	}
	here := Where{Timeline: 3, LSN: "0/4000000", SystemID: sys}
	judge := func(l Epoch, h Where, hist string) (*Switchover, string) {
		if why := witnessWhy(l, h); why != "" {
			return nil, why
		}
		return judgeHistory(l, h, hist)
	}
	sw, why := judge(last(2, "0/3000200", &one, &on), here, history)
	if sw == nil || sw.From != 2 || sw.To != 3 || sw.At != "0/30002F0" {
		t.Fatalf("a promotion of the synchronous standby: %+v, %q", sw, why)
	}
	zero, off, local := 0, "off", "local"
	other := here
	other.SystemID = "1"
	for _, c := range []struct {
		name string
		last Epoch
		here Where
		hist string
		want string
	}{
		{"no witness (an older row)", last(2, "0/3000200", nil, nil), here, history, "no replication witness"},
		{"no synchronous standby", last(2, "0/3000200", &zero, &on), here, history, "no standby in sync_state"},
		{"synchronous_commit off", last(2, "0/3000200", &one, &off), here, history, "synchronous_commit = off"},
		{"synchronous_commit local", last(2, "0/3000200", &one, &local), here, history, "synchronous_commit = local"},
		{"another cluster", last(2, "0/3000200", &one, &on), other, history, "system identifier"},
		{"two promotions since", last(1, "0/3000100", &one, &on), here, history, "not from the last pass's 1"},
		{"branched before the last pass", last(2, "0/3000300", &one, &on), here, history, "before the last pass's position"},
		{"point-in-time recovery", last(2, "0/3000200", &one, &on), here,
			"2\t0/30002F0\tbefore 2026-12-02 03:00:00+00\n", "point-in-time recovery"},
		{"unreadable", last(2, "0/3000200", &one, &on), here, "garbage", "unreadable"},
	} {
		if sw, why := judge(c.last, c.here, c.hist); sw != nil || !strings.Contains(why, c.want) {
			t.Errorf("%s: %+v, %q (want a refusal naming %q)", c.name, sw, why, c.want)
		}
	}
}

// A role that may not read pg_stat_replication's sync_state sees a
// synchronous standby as hidden: the startup warning says a switchover
// will refuse. A standby, or a primary with no synchronous standby
// named, says nothing.
func TestReplicationSyncHidden(t *testing.T) {
	for _, c := range []struct {
		r    Replication
		want bool
	}{
		{Replication{Standbys: 1, Hidden: 1, SyncNames: "node2"}, true},
		{Replication{Standbys: 1, Synchronous: 1, SyncNames: "node2"}, false},
		{Replication{Standbys: 1, Hidden: 1}, false},
		{Replication{Standby: true, Standbys: 1, Hidden: 1, SyncNames: "node2"}, false},
	} {
		if got := c.r.SyncHidden(); got != c.want {
			t.Errorf("%+v: SyncHidden %v, want %v", c.r, got, c.want)
		}
	}
}
