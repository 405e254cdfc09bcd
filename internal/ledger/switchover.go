package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Switchovers (issue 38): a new timeline refuses the pass unless
// PostgreSQL itself shows that no claim can have been lost. A claim's
// notice goes out only after its commit returned; under synchronous
// replication (a standby in sync_state 'sync', synchronous_commit on or
// remote_apply) a commit returns only once that standby flushed it. So
// when the last epoch (written before its pass claimed anything) says the
// pass claimed that way, when the new timeline branched straight from the
// last epoch's (the history file's last line), at or after the last
// epoch's position, with no recovery target (a promotion, not a point-in-
// time recovery), on the same cluster (system identifier), then the
// promoted server is the standby that acknowledged every claim and the
// pass goes on. Anything else, or anything it cannot read, refuses.
//
// What it trusts: that the server promoted was the synchronous standby
// of the last pass (Patroni's synchronous_mode promotes no other; a
// manual pg_promote of a standby that had left the synchronous set, or a
// restore that replays an archive to its end without a recovery target,
// are not told apart from a switchover). docs/recovery-ha.md says which
// setups can tell.

// Switchover is a new timeline that a lossless switchover explains.
type Switchover struct {
	From    int64  `json:"from_timeline"`
	To      int64  `json:"to_timeline"`
	At      string `json:"at"`      // the LSN where To branched from From
	Standby int    `json:"standby"` // synchronous standbys the last pass claimed under
	LastRun string `json:"last_run_id"`
}

func (s Switchover) String() string {
	return fmt.Sprintf("switchover from timeline %d to %d at %s (the last pass %s claimed under %d synchronous standby(s))",
		s.From, s.To, s.At, s.LastRun, s.Standby)
}

// promotionReason is the reason PostgreSQL writes in a timeline history
// file for a recovery that ended without a target: a promotion. A
// point-in-time recovery names its target instead ("before 2026-…",
// "at restore point …").
const promotionReason = "no recovery target specified"

// historyEntry is one line of a timeline history file.
type historyEntry struct {
	Parent int64
	Switch uint64 // the LSN where the next timeline branched
	Reason string
}

// parseHistory reads a timeline history file: lines of parent timeline,
// switch LSN and reason, tab-separated; blank lines and comments skipped.
func parseHistory(text string) ([]historyEntry, error) {
	var es []historyEntry
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 2 {
			return nil, fmt.Errorf("timeline history line %q", line)
		}
		tli, err := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("timeline history line %q: %w", line, err)
		}
		at, err := parseLSN(strings.TrimSpace(f[1]))
		if err != nil {
			return nil, fmt.Errorf("timeline history line %q: %w", line, err)
		}
		e := historyEntry{Parent: tli, Switch: at}
		if len(f) == 3 {
			e.Reason = strings.TrimSpace(f[2])
		}
		es = append(es, e)
	}
	return es, nil
}

// parseLSN reads an LSN written as PostgreSQL writes it (hi/lo in hex).
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("LSN %q", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("LSN %q: %w", s, err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("LSN %q: %w", s, err)
	}
	return h<<32 | l, nil
}

func formatLSN(v uint64) string { return fmt.Sprintf("%X/%X", v>>32, v&0xFFFFFFFF) }

// witnessWhy says why the last epoch's witness does not show that every
// claim since it was acknowledged by a synchronous standby; "" when it
// does.
func witnessWhy(last Epoch, here Where) string {
	switch {
	case last.SyncStandbys == nil || last.SyncCommit == nil || last.LSN == nil:
		return fmt.Sprintf("the last epoch (%s %s) recorded no replication witness", last.Kind, last.RunID)
	case *last.SyncStandbys == 0:
		return fmt.Sprintf("the last pass (%s) claimed with no standby in sync_state 'sync' (or the role may not read pg_stat_replication's sync_state: grant pg_monitor)", last.RunID)
	case *last.SyncCommit != "on" && *last.SyncCommit != "remote_apply":
		return fmt.Sprintf("the last pass (%s) claimed with synchronous_commit = %s, which does not wait for the standby's flush", last.RunID, *last.SyncCommit)
	case last.SystemID == nil || *last.SystemID != here.SystemID:
		return "the database is another cluster than the last pass's (system identifier)"
	}
	return ""
}

// judgeHistory checks the new timeline's history against the last epoch:
// the last line must branch from the last epoch's timeline, at or after
// its position, with no recovery target.
func judgeHistory(last Epoch, here Where, history string) (*Switchover, string) {
	es, err := parseHistory(history)
	if err != nil || len(es) == 0 {
		return nil, fmt.Sprintf("the history of timeline %d is unreadable (%v)", here.Timeline, err)
	}
	e := es[len(es)-1]
	if e.Parent != *last.Timeline {
		return nil, fmt.Sprintf("timeline %d branched from timeline %d, not from the last pass's %d: more than one promotion since, or a restore",
			here.Timeline, e.Parent, *last.Timeline)
	}
	if e.Reason != promotionReason {
		return nil, fmt.Sprintf("timeline %d ended a recovery at a target (%q): a point-in-time recovery", here.Timeline, e.Reason)
	}
	lastLSN, err := parseLSN(*last.LSN)
	if err != nil || lastLSN > e.Switch {
		return nil, fmt.Sprintf("timeline %d branched at %s, before the last pass's position %s", here.Timeline, formatLSN(e.Switch), *last.LSN)
	}
	return &Switchover{From: e.Parent, To: here.Timeline, At: formatLSN(e.Switch), Standby: *last.SyncStandbys, LastRun: last.RunID}, ""
}

// judgeSwitch decides whether the new timeline of here, after the last
// epoch, is a lossless switchover: a *Switchover, or nil and why not. An
// error only for a failure of the connection, not of the server's
// answer (a history file the role may not read is a reason to refuse).
func judgeSwitch(ctx context.Context, db sqlx.QueryerContext, last Epoch, here Where) (*Switchover, string, error) {
	if why := witnessWhy(last, here); why != "" {
		return nil, why, nil
	}
	var history string
	if err := sqlx.GetContext(ctx, db, &history, noticeEpochTimelineHistory, here.Timeline); err != nil {
		var pe *pq.Error
		if errors.As(err, &pe) {
			return nil, fmt.Sprintf("the role cannot read timeline %d's history (GRANT EXECUTE ON FUNCTION pg_read_file(text) TO the role): %s",
				here.Timeline, pe.Message), nil
		}
		return nil, "", fmt.Errorf("timeline history: %w", err)
	}
	sw, why := judgeHistory(last, here, history)
	return sw, why, nil
}

// recordSwitchover records the pass's epoch as an EpochSwitchover, the
// switch in its reason: the passes after it compare with it.
func recordSwitchover(ctx context.Context, db sqlx.QueryerContext, runID string, sw Switchover, now time.Time) error {
	var id int64
	if err := sqlx.GetContext(ctx, db, &id, noticeEpochSwitchover, runID, now.UTC(), sw.String()); err != nil {
		return fmt.Errorf("record switchover: %w", epochErr(err))
	}
	return nil
}
