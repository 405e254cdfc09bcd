// Package status answers the question of the operator paged at night, "is
// everything all right?", in one read-only look at the ledger: the last
// pass of each shard, the quarantine, the retries, what did not go out in
// the last day, whether the next pass will refuse after a restore or a
// failover (and the command that lifts it), and the last request the
// receiver committed per provider. It writes nothing; every count is read
// through an index (sql/0002, sql/0025), so that it stays under a second
// on a ledger of 10M rows (tools/bench -scenario status).
package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// Options are Report's thresholds. The zero value takes every default.
type Options struct {
	// QuarantineAfter is the age from which a claim with no recorded
	// outcome is in quarantine (default 15m, as `scan quarantine`).
	QuarantineAfter time.Duration
	// Alarm is the age of the oldest quarantined claim from which it needs
	// a person (default 1h).
	Alarm time.Duration
	// Window is how far back missed and undelivered are counted
	// (default 24h).
	Window time.Duration
	// StaleAfter is how long a pass may run with no end recorded before it
	// counts as not completed (killed) (default 2h).
	StaleAfter time.Duration
}

func (o Options) withDefaults() Options {
	if o.QuarantineAfter <= 0 {
		o.QuarantineAfter = 15 * time.Minute
	}
	if o.Alarm <= 0 {
		o.Alarm = time.Hour
	}
	if o.Window <= 0 {
		o.Window = 24 * time.Hour
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = 2 * time.Hour
	}
	return o
}

// Pass is the last pass of one shard, as status judges it.
type Pass struct {
	ledger.Pass
	// Running: no end is recorded and it started less than StaleAfter ago.
	Running bool `json:"running"`
	// Failed: it ended with an error, or no end is recorded StaleAfter
	// after its start (the process was killed).
	Failed bool `json:"failed"`
}

// Quarantine is the claims with no recorded outcome older than
// QuarantineAfter.
type Quarantine struct {
	Count           int        `json:"count"`
	OldestClaimedAt *time.Time `json:"oldest_claimed_at"`
	Oldest          *Claim     `json:"oldest,omitempty"`
}

// Claim names one claim: what `scan lookup` and `scan resolve` take.
type Claim struct {
	NoticeKey      string `json:"notice_key"`
	SubscriptionID string `json:"subscription_id"`
	RunID          string `json:"run_id"`
}

// Retry is the rows in state retry.
type Retry struct {
	Count           int        `json:"count"`
	OldestClaimedAt *time.Time `json:"oldest_claimed_at"`
}

// Recovery says whether the next pass will refuse (exit 4) and what lifts it.
type Recovery struct {
	Reason string `json:"reason"`
	// Command is the `scan recover` line to run with the provider's record.
	Command string `json:"command"`
	// NoneLost is the line to run instead when nothing can have been lost.
	NoneLost string `json:"none_lost_command"`
}

// Status is Report's answer. Its JSON is `scan status -o json`.
type Status struct {
	Now            time.Time  `json:"now"`
	LastPass       []Pass     `json:"last_pass"`
	Quarantine     Quarantine `json:"quarantine"`
	Retry          Retry      `json:"retry"`
	Missed24h      int        `json:"missed_24h"`
	Undelivered24h int        `json:"undelivered_24h"`
	RecoveryNeeded bool       `json:"recovery_needed"`
	Recovery       *Recovery  `json:"recovery,omitempty"`
	// TimelineChecked is false where the server does not tell its WAL
	// timeline (a standby, some managed services): no refusal can be seen.
	TimelineChecked bool             `json:"timeline_checked"`
	Receiver        []ledger.Receipt `json:"receiver"`
	// Problems lists what needs a person (NeedsPerson), empty when none.
	Problems []string `json:"problems"`

	alarm time.Duration
}

// Report reads the status of the ledger in db at now, from one snapshot
// (a read-only transaction). It writes nothing.
func Report(ctx context.Context, db *sqlx.DB, now time.Time, opts Options) (Status, error) {
	var s Status
	err := ledger.ReadSnapshot(ctx, db, func(tx *sqlx.Tx) error {
		var err error
		s, err = report(ctx, tx, now, opts)
		return err
	})
	return s, err
}

func report(ctx context.Context, db sqlx.QueryerContext, now time.Time, opts Options) (Status, error) {
	opts = opts.withDefaults()
	s := Status{Now: now.UTC(), alarm: opts.Alarm, LastPass: []Pass{}, Receiver: []ledger.Receipt{}}
	if err := s.readPasses(ctx, db, opts); err != nil {
		return Status{}, err
	}
	if err := s.readQuarantine(ctx, db, now.Add(-opts.QuarantineAfter)); err != nil {
		return Status{}, err
	}
	var err error
	if s.Retry.Count, err = ledger.RetryCount(ctx, db); err != nil {
		return Status{}, err
	}
	if s.Retry.OldestClaimedAt, err = ledger.RetryOldest(ctx, db); err != nil {
		return Status{}, err
	}
	u, err := ledger.UnreachedSince(ctx, db, now.Add(-opts.Window))
	if err != nil {
		return Status{}, err
	}
	s.Missed24h, s.Undelivered24h = u.Missed, u.Undelivered
	rs, err := ledger.Receipts(ctx, db)
	if err != nil {
		return Status{}, err
	}
	s.Receiver = append(s.Receiver, rs...)
	// Last: where the server cannot tell its timeline (a standby) the
	// check fails, which ends the transaction's use.
	if err := s.readRecovery(ctx, db); err != nil {
		return Status{}, err
	}
	s.Problems = s.NeedsPerson()
	return s, nil
}

func (s *Status) readPasses(ctx context.Context, db sqlx.QueryerContext, opts Options) error {
	ps, err := ledger.LastPasses(ctx, db)
	if err != nil {
		return err
	}
	for _, p := range ps {
		st := Pass{Pass: p}
		if p.EndedAt == nil {
			st.Running = s.Now.Sub(p.StartedAt) < opts.StaleAfter
			st.Failed = !st.Running
		} else {
			st.Failed = !p.Completed
		}
		s.LastPass = append(s.LastPass, st)
	}
	return nil
}

func (s *Status) readQuarantine(ctx context.Context, db sqlx.QueryerContext, before time.Time) error {
	oldest, err := ledger.Quarantine(ctx, db, before, 1)
	if err != nil {
		return err
	}
	if len(oldest) == 0 {
		return nil
	}
	r := oldest[0]
	at := r.ClaimedAt.UTC()
	s.Quarantine.OldestClaimedAt = &at
	s.Quarantine.Oldest = &Claim{NoticeKey: r.NoticeKey, SubscriptionID: r.SubscriptionID, RunID: r.RunID}
	s.Quarantine.Count, err = ledger.QuarantineCount(ctx, db, before)
	return err
}

func (s *Status) readRecovery(ctx context.Context, db sqlx.QueryerContext) error {
	_, err := ledger.CheckTimeline(ctx, db)
	var re *ledger.RestoredError
	switch {
	case err == nil:
		s.TimelineChecked = true
	case errors.Is(err, ledger.ErrNoTimeline):
	case errors.As(err, &re):
		s.TimelineChecked, s.RecoveryNeeded = true, true
		s.Recovery = &Recovery{
			Reason: fmt.Sprintf("the database is on timeline %d, but the last pass it knows of (%s at %s) found it elsewhere: a restore or a failover",
				re.Now.Timeline, re.Last.RunID, re.Since()),
			Command:  re.RecoverCommand(),
			NoneLost: "scan recover --none-lost --reason TEXT --by NAME",
		}
	default:
		return err
	}
	return nil
}

// ErrNeedsPerson is what Err wraps: `scan status` ends with it (exit 1)
// after the status was printed, so that it can serve as a probe.
var ErrNeedsPerson = errors.New("status: needs a person")

// Err is nil when nothing needs a person, else ErrNeedsPerson joined with
// the Problems, in one line.
func (s Status) Err() error {
	if len(s.Problems) == 0 {
		return nil
	}
	return errors.Join(ErrNeedsPerson, errors.New(strings.Join(s.Problems, "; ")))
}

// NeedsPerson lists what needs a person now, each in one line: a claim in
// quarantine older than Options.Alarm, a recovery needed, a shard whose
// last pass did not complete. Empty when all is well (`scan status`
// exits 0, else 1).
func (s Status) NeedsPerson() []string {
	out := []string{}
	if q := s.Quarantine; q.OldestClaimedAt != nil && s.Now.Sub(*q.OldestClaimedAt) >= s.alarm {
		out = append(out, fmt.Sprintf("quarantine: %d claims with no outcome, the oldest %s (key %s, subscription %s, run %s) claimed %s ago: scan reconcile, then scan resolve",
			q.Count, q.OldestClaimedAt.Format(time.RFC3339), q.Oldest.NoticeKey, q.Oldest.SubscriptionID, q.Oldest.RunID,
			s.Now.Sub(*q.OldestClaimedAt).Truncate(time.Minute)))
	}
	if s.RecoveryNeeded {
		out = append(out, "recovery needed: the next pass will refuse (exit 4): run "+s.Recovery.Command)
	}
	for _, p := range s.LastPass {
		if !p.Failed {
			continue
		}
		why := "no end recorded since " + p.StartedAt.UTC().Format(time.RFC3339) + " (killed?)"
		if p.EndedAt != nil {
			why = "ended " + p.EndedAt.UTC().Format(time.RFC3339) + " with an error: " + p.Error
		}
		out = append(out, fmt.Sprintf("shard %d/%d: the last pass %s did not complete: %s", p.Shard, p.Shards, p.RunID, why))
	}
	return out
}
