package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"scan/internal/cli"
	"scan/internal/ledger"
	"scan/internal/policy"

	"github.com/spf13/pflag"
)

// cmdPrune removes whole billing periods older than a horizon from the
// ledger (see ledger.Prune), and prints what it removed as one JSON
// object. A horizon shorter than the policy's longest lead plus a month,
// or a period to remove that still holds claims, is refused: exit 2,
// nothing removed.
var pruneCommand = command{use: "prune", short: "remove billing periods older than the retention (--older-than D|T, --dry-run); prints what it removed as JSON",
	env: []string{"DATABASE_URL", "SCAN_CONFIG"}, flags: pruneFlags}

// pruneArgs are scan prune's flags.
type pruneArgs struct {
	older       *cli.TimeFlag
	dry         bool
	config, now string
	lockTimeout time.Duration
}

// pruneFlags declares scan prune's flags.
func pruneFlags(fs *pflag.FlagSet) runFunc {
	a := pruneArgs{older: cli.NewTimeFlag("")}
	fs.Var(a.older, "older-than", "remove billing periods that started before this: a duration back (400d) or an RFC 3339 instant (default: the policy's retention)")
	fs.BoolVar(&a.dry, "dry-run", false, "report what would be removed; remove nothing")
	fs.StringVar(&a.config, "config", "", "policy file (env SCAN_CONFIG); built-in defaults when empty")
	fs.DurationVar(&a.lockTimeout, "lock-timeout", 5*time.Second, "the longest a pass's statements may wait behind prune's lock; prune gives up (exit 1) when it cannot get it in time")
	fs.StringVar(&a.now, "now", "", "take this RFC3339 instant as now (staging data)")
	return func(ctx context.Context, e *env, _ []string) error { return cmdPrune(ctx, e, fs, &a) }
}

func cmdPrune(ctx context.Context, e *env, fs *pflag.FlagSet, a *pruneArgs) error {
	if a.lockTimeout <= 0 {
		return usagef("--lock-timeout", "must be positive")
	}
	now, err := e.now(a.now)
	if err != nil {
		return err
	}
	pol, err := loadPolicy(e, fs, a.config)
	if err != nil {
		return err
	}
	horizon := time.Duration(pol.Retention)
	if a.older.Given() {
		horizon = a.older.Ago(now)
	}
	if err := pol.CheckRetention(horizon); err != nil {
		field := "--older-than"
		if !a.older.Given() {
			field = "retention"
		}
		return usagef(field, "%v", err)
	}
	before := now.Add(-horizon)
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := ledger.Prune(ctx, db, ledger.PruneOptions{Before: before, DryRun: a.dry, LockTimeout: a.lockTimeout})
	var ce *ledger.ClaimedError
	if errors.As(err, &ce) {
		return usagef("prune", "%s; nothing was removed", ce.Error())
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(struct {
		OlderThan   string             `json:"older_than"`
		Before      string             `json:"before"`
		DryRun      bool               `json:"dry_run"`
		Removed     []ledger.Partition `json:"removed"`
		Resolutions int64              `json:"resolutions_removed"`
		Evidence    int64              `json:"evidence_removed"`
		Shadow      int64              `json:"shadow_removed"`
		Messages    int64              `json:"messages_removed"` // proof of notice (docs/proof.md)
	}{policy.FormatDuration(horizon), before.Format("2006-01-02"), a.dry, res.Removed, res.Resolutions, res.Evidence, res.Shadow, res.Messages})
}
