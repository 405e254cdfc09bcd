package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"scan/internal/ledger"
	"scan/internal/policy"
)

// cmdPrune removes whole billing periods older than a horizon from the
// ledger (see ledger.Prune), and prints what it removed as one JSON
// object. A horizon shorter than the policy's longest lead plus a month,
// or a period to remove that still holds claims, is refused: exit 2,
// nothing removed.
func cmdPrune(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "prune", "[--older-than D] [--dry-run] [--config FILE] [--lock-timeout 5s]")
	older := fs.String("older-than", "", "remove billing periods that started longer ago than this, e.g. 400d (default: the policy's retention)")
	dry := fs.Bool("dry-run", false, "report what would be removed; remove nothing")
	config := fs.String("config", "", "policy file (env SCAN_CONFIG); built-in defaults when empty")
	lockTimeout := fs.Duration("lock-timeout", 5*time.Second, "the longest a pass's statements may wait behind prune's lock; prune gives up (exit 1) when it cannot get it in time")
	nowFlag := fs.String("now", "", "take this RFC3339 instant as now (staging data)")
	if err := parseNoArgs(fs, args, ""); err != nil {
		return err
	}
	if *lockTimeout <= 0 {
		return usagef("--lock-timeout", "must be positive")
	}
	pol, err := loadPolicy(e, fs, *config)
	if err != nil {
		return err
	}
	horizon := time.Duration(pol.Retention)
	if *older != "" {
		if horizon, err = policy.ParseDuration(*older); err != nil {
			return usagef("--older-than", "%v", err)
		}
	}
	if min := pol.MinRetention(); horizon < min {
		field := "--older-than"
		if *older == "" {
			field = "retention"
		}
		return usagef(field, "%s is shorter than the longest notice window's lead (%s) plus a safety margin of %s: periods that young may still be claimed, and a pass would send their notices again; use at least %s",
			policy.FormatDuration(horizon), policy.FormatDuration(pol.LongestLead()), policy.FormatDuration(policy.PruneMargin), policy.FormatDuration(min))
	}
	now, err := e.now(*nowFlag)
	if err != nil {
		return err
	}
	before := now.Add(-horizon)
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := ledger.Prune(ctx, db, ledger.PruneOptions{Before: before, DryRun: *dry, LockTimeout: *lockTimeout})
	var ce *ledger.ClaimedError
	if errors.As(err, &ce) {
		return &usageError{field: "prune", msg: ce.Error() + "; nothing was removed"}
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
	}{policy.FormatDuration(horizon), before.Format("2006-01-02"), *dry, res.Removed, res.Resolutions, res.Evidence, res.Shadow, res.Messages})
}
