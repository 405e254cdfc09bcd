package main

import (
	"context"
	"encoding/json"
	"os"

	"scan/internal/backfill"
	"scan/internal/ledger"
)

// cmdShadow is `scan shadow report --legacy FILE.csv`: what the shadow
// passes (`scan run --shadow`) would have sent against what a legacy
// sender sent, as JSON (ledger.ShadowReport).
func cmdShadow(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] != "report" {
		return usagef("shadow", "the only subcommand is report: scan shadow report --legacy FILE.csv")
	}
	fs := newFlags(e, "shadow report", "--legacy FILE.csv")
	legacy := fs.String("legacy", "", "the legacy sender's sends, as backfill reads them: subscription_id,period_start,kind,revision,sent_at")
	if err := parseNoArgs(fs, args[1:], "; use --legacy FILE.csv"); err != nil {
		return err
	}
	if *legacy == "" {
		return usagef("--legacy", "required: a CSV file (subscription_id,period_start,kind,revision,sent_at)")
	}
	f, err := os.Open(*legacy)
	if err != nil {
		return usagef("--legacy", "%v", err)
	}
	defer f.Close()
	recs, err := backfill.ReadSends(f)
	if err != nil {
		return usagef("--legacy", "%s: %v", *legacy, err)
	}
	sends := make([]ledger.LegacySend, len(recs))
	for i, r := range recs {
		sends[i] = ledger.LegacySend{Tuple: r.Tuple, SentAt: r.SentAt}
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	rep, err := ledger.ShadowCompare(ctx, db, sends)
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(rep)
}
