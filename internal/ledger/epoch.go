package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Epochs: where each pass found the ledger's database (notice_ledger_epoch,
// sql/0007). A promotion (a failover) or a point-in-time recovery starts a
// new WAL timeline; a pass that finds one other than the last recorded
// refuses to claim (ErrRestored) until `scan recover` records an
// acknowledged epoch on the new timeline (Acknowledge).
//
// What it cannot see: a restore that keeps the timeline (a volume
// snapshot, a copy of the data directory, a dump restored into a cluster
// on the same timeline number) restores this table with the ledger, so
// the last pass it knows of is the snapshot's; and a managed service that
// hides the WAL functions (where they fail, a pass checks nothing and says
// so).

// The kinds of epoch.
const (
	EpochPass     = "pass"      // a pass found the database here and went on
	EpochRecover  = "recover"   // `scan recover` recorded the provider's record, then lifted the refusal
	EpochNoneLost = "none_lost" // an operator acknowledged that nothing was lost
	// EpochSwitchover: a pass found a new timeline that a lossless
	// switchover explains (switchover.go) and went on.
	EpochSwitchover = "switchover"
)

// Epoch is one row of notice_ledger_epoch: where a pass, or a recovery,
// found the database.
type Epoch struct {
	ID         int64      `db:"id" json:"id"`
	Kind       string     `db:"kind" json:"kind"`
	RunID      string     `db:"run_id" json:"run_id"`
	Timeline   *int64     `db:"timeline" json:"timeline,omitempty"`
	LSN        *string    `db:"lsn" json:"lsn,omitempty"`
	RecordedAt time.Time  `db:"recorded_at" json:"recorded_at"`
	RecordedBy *string    `db:"recorded_by" json:"recorded_by,omitempty"`
	Reason     *string    `db:"reason" json:"reason,omitempty"`
	Since      *time.Time `db:"since" json:"since,omitempty"`
	Witness
}

// Witness is what an epoch records of the replication its pass claimed
// under (sql/0027); nil fields on rows older than the migration.
type Witness struct {
	SyncStandbys *int    `db:"sync_standbys" json:"sync_standbys,omitempty"` // standbys in sync_state 'sync'
	SyncCommit   *string `db:"sync_commit" json:"sync_commit,omitempty"`     // what its claims commit with (at least on)
	SystemID     *string `db:"system_id" json:"system_id,omitempty"`         // pg_control_system().system_identifier
}

// Where is where the database is now: its WAL timeline and position.
type Where struct {
	Timeline int64  `db:"timeline" json:"timeline"`
	LSN      string `db:"lsn" json:"lsn"`
	SystemID string `db:"system_id" json:"system_id,omitempty"`
	// Switchover is set when the pass found a new timeline that a
	// lossless switchover explains, and recorded it (EpochSwitchover).
	Switchover *Switchover `db:"-" json:"switchover,omitempty"`
}

// RestoredError is a pass's refusal: the database is not where the last
// epoch left it. It wraps ErrRestored.
type RestoredError struct {
	Last Epoch // the last epoch recorded (the last pass the ledger knows of)
	Now  Where // where the database is now
	// Why says why a new timeline was not taken for a lossless switchover
	// (empty when the timeline did not change).
	Why string
}

func (e *RestoredError) Error() string {
	tl := "unknown"
	if e.Last.Timeline != nil {
		tl = fmt.Sprint(*e.Last.Timeline)
	}
	lsn := ""
	if e.Last.LSN != nil {
		lsn = *e.Last.LSN
	}
	why := ""
	if e.Why != "" {
		why = " (not a lossless switchover: " + e.Why + ")"
	}
	return fmt.Sprintf("%s: the database is on timeline %d at %s, but the last pass it knows of (%s %s at %s) found it on timeline %s at %s%s; "+
		"claims recorded after that may be lost with notices already sent: nothing was claimed or sent. "+
		"Run `scan recover --since %s` with the provider's record (--events FILE or --ask PROVIDER), "+
		"or `scan recover --none-lost --reason TEXT --by NAME` if nothing can have been lost",
		ErrRestored.Error(), e.Now.Timeline, e.Now.LSN, e.Last.Kind, e.Last.RunID, e.Last.RecordedAt.UTC().Format(time.RFC3339),
		tl, lsn, why, e.Last.RecordedAt.UTC().Format(time.RFC3339))
}

func (e *RestoredError) Unwrap() error { return ErrRestored }

// Since is the instant a recovery reads the provider's record from: the
// last epoch before the database went back (RFC 3339, UTC).
func (e *RestoredError) Since() string { return e.Last.RecordedAt.UTC().Format(time.RFC3339) }

// RecoverCommand is the command line that lifts the refusal with the
// provider's record (PROVIDER: the one the notices went out by; or
// --events FILE with an export of its events).
func (e *RestoredError) RecoverCommand() string {
	return "scan recover --since " + e.Since() + " --ask PROVIDER"
}

// ErrNoTimeline says that the server does not tell its WAL timeline (a
// standby, or a managed service that hides the WAL functions): no epoch
// can be checked or recorded.
var ErrNoTimeline = errors.New("the server does not tell its WAL timeline")

// CheckPass records that the pass runID found the database where it is,
// in one statement, unless the database went back in time since the last
// epoch recorded: on another timeline, or behind its WAL position. Then it
// records nothing and returns a *RestoredError (errors.Is ErrRestored);
// except where the new timeline is a lossless switchover (switchover.go):
// then it records an EpochSwitchover and returns Where.Switchover. A
// ledger with no epoch yet (fresh, or migrated by an older release)
// refuses nothing. Where the server does not tell its timeline it returns
// ErrNoTimeline: the caller goes on unchecked.
func CheckPass(ctx context.Context, db sqlx.QueryerContext, runID string, now time.Time) (Where, error) {
	return checkEpoch(ctx, db, true, runID, now)
}

// CheckTimeline is CheckPass that records nothing (neither the pass's
// epoch nor a switchover's): the dry run's check, which runs in a
// read-only transaction. It returns a *RestoredError where a pass now
// would refuse, Where.Switchover where it would go on across a lossless
// switchover, ErrNoTimeline where the server does not tell its timeline.
func CheckTimeline(ctx context.Context, db sqlx.QueryerContext) (Where, error) {
	return checkEpoch(ctx, db, false, "", time.Time{})
}

// checkEpoch is CheckPass, and with record false CheckTimeline.
func checkEpoch(ctx context.Context, db sqlx.QueryerContext, record bool, runID string, now time.Time) (Where, error) {
	var here Where
	var recorded bool
	var last struct {
		ID         *int64     `db:"id"`
		Kind       *string    `db:"kind"`
		RunID      *string    `db:"run_id"`
		Timeline   *int64     `db:"last_timeline"`
		LSN        *string    `db:"last_lsn"`
		RecordedAt *time.Time `db:"recorded_at"`
		Witness
	}
	stmt, args := noticeEpochCheckOnly, []any(nil)
	if record {
		stmt, args = noticeEpochCheckPass, []any{runID, now.UTC()}
	}
	rows, err := db.QueryxContext(ctx, stmt, args...)
	if err != nil {
		return Where{}, epochErr(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return Where{}, epochErr(err)
		}
		return Where{}, fmt.Errorf("check timeline: no row")
	}
	if err := rows.Scan(&here.Timeline, &here.LSN, &here.SystemID, &recorded, &last.ID, &last.Kind, &last.RunID, &last.Timeline, &last.LSN,
		&last.RecordedAt, &last.SyncStandbys, &last.SyncCommit, &last.SystemID); err != nil {
		return Where{}, epochErr(err)
	}
	if err := rows.Close(); err != nil {
		return Where{}, epochErr(err)
	}
	if recorded || last.ID == nil {
		return here, nil
	}
	re := &RestoredError{Now: here, Last: Epoch{ID: *last.ID, Kind: *last.Kind, RunID: *last.RunID,
		Timeline: last.Timeline, LSN: last.LSN, RecordedAt: *last.RecordedAt, Witness: last.Witness}}
	if last.Timeline == nil || *last.Timeline == here.Timeline {
		return here, re
	}
	sw, why, err := judgeSwitch(ctx, db, re.Last, here)
	if err != nil {
		return here, err
	}
	if sw == nil {
		re.Why = why
		return here, re
	}
	if !record {
		here.Switchover = sw
		return here, nil
	}
	if err := recordSwitchover(ctx, db, runID, *sw, now); err != nil {
		return here, err
	}
	here.Switchover = sw
	return here, nil
}

// epochErr turns a server that cannot tell its timeline into ErrNoTimeline.
func epochErr(err error) error {
	var pe *pq.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case "55000", // object_not_in_prerequisite_state: recovery is in progress (a standby)
			"0A000", // feature_not_supported (a managed service's own engine)
			"42501", // insufficient_privilege
			"42883": // undefined_function
			return fmt.Errorf("%w: %v", ErrNoTimeline, err)
		}
	}
	return fmt.Errorf("check timeline: %w", err)
}

// Acknowledge records an acknowledged epoch where the database is now
// (kind EpochRecover or EpochNoneLost, with who, why and the point the
// recovery read the provider's record from): the passes after it compare
// with it, so it lifts the refusal. Where the server does not tell its
// timeline it returns ErrNoTimeline (and passes there check nothing).
func Acknowledge(ctx context.Context, db sqlx.ExtContext, kind, runID, by, reason string, since, now time.Time) (Epoch, error) {
	var e Epoch
	var s *time.Time
	if !since.IsZero() {
		u := since.UTC()
		s = &u
	}
	if err := sqlx.GetContext(ctx, db, &e, noticeEpochAcknowledge, kind, runID, by, reason, s, now.UTC()); err != nil {
		return Epoch{}, epochErr(err)
	}
	return e, nil
}

// LastEpoch returns the last epoch recorded, nil when there is none.
func LastEpoch(ctx context.Context, db sqlx.QueryerContext) (*Epoch, error) {
	var es []Epoch
	if err := sqlx.SelectContext(ctx, db, &es, noticeEpochLast); err != nil {
		return nil, fmt.Errorf("last epoch: %w", err)
	}
	if len(es) == 0 {
		return nil, nil
	}
	return &es[0], nil
}

// Replication is what the ledger's server says of its standbys.
type Replication struct {
	Standby      bool   `db:"standby"`      // the server is itself a standby (in recovery)
	SyncNames    string `db:"sync_names"`   // synchronous_standby_names
	Standbys     int    `db:"standbys"`     // walsenders streaming to standbys
	Synchronous  int    `db:"synchronous"`  // of those, sync or quorum
	Hidden       int    `db:"hidden"`       // of those, whose sync_state this role may not read
	CommitOnHere string `db:"commit_local"` // this session's synchronous_commit
}

// AllAsync reports whether the server is a primary with standbys of which
// none is synchronous: a failover to one of them can lose the last claims.
// When the role may not read the standbys' states (no pg_read_all_stats)
// it can tell only when synchronous_standby_names is empty.
func (r Replication) AllAsync() bool {
	if r.Standby || r.Standbys == 0 || r.Synchronous > 0 {
		return false
	}
	return r.Hidden == 0 || r.SyncNames == ""
}

// SyncHidden reports whether the server is a primary with a synchronous
// standby named (synchronous_standby_names) whose state this role may not
// read: a pass's epoch then records no synchronous standby, so a
// switchover refuses like a lossy failover (grant pg_monitor).
func (r Replication) SyncHidden() bool {
	return !r.Standby && r.Hidden > 0 && r.SyncNames != ""
}

// ReplicationOf reads what the server says of its standbys.
func ReplicationOf(ctx context.Context, db sqlx.QueryerContext) (Replication, error) {
	var r Replication
	if err := sqlx.GetContext(ctx, db, &r, noticeReplication); err != nil {
		return Replication{}, fmt.Errorf("replication: %w", err)
	}
	return r, nil
}
