package main

import (
	"context"
	"os"
	"strconv"

	"scan/internal/backfill"
	"scan/internal/cli"
	"scan/internal/ledger"

	"github.com/spf13/pflag"
)

// cmdShadow is `scan shadow report --legacy FILE.csv`: what the shadow
// passes (`scan run --shadow`) would have sent against what a legacy
// sender sent, as JSON (ledger.ShadowReport).
var shadowCommand = command{use: "shadow", short: "what shadow passes (scan run --shadow) would have sent: shadow report",
	subs: []*command{&shadowReportCommand}}

var shadowReportCommand = command{use: "report", short: "the shadow passes against a legacy sender's sends (--legacy FILE.csv, -o json|csv|table)",
	long: "JSON with legacy_sends, duplicates, outside_window, missed_by_legacy and would_send.",
	env:  []string{"DATABASE_URL"}, flags: shadowReportFlags}

// shadowReportFlags declares scan shadow report's flags.
func shadowReportFlags(fs *pflag.FlagSet) runFunc {
	legacy := fs.String("legacy", "", "the legacy sender's sends, as backfill reads them: subscription_id,period_start,kind,revision,sent_at")
	out := cli.OutputFlag(fs, false)
	return func(ctx context.Context, e *env, _ []string) error { return cmdShadowReport(ctx, e, legacy, out) }
}

func cmdShadowReport(ctx context.Context, e *env, legacy *string, out *cli.Output) error {
	format, err := outputFormat(e, out)
	if err != nil {
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
	sends, err := backfill.LegacySends(f)
	if err != nil {
		return usagef("--legacy", "%s: %v", *legacy, err)
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
	l := &cli.Listing{Header: []string{"legacy_sends", "legacy_notices", "duplicates", "outside_window", "missed_by_legacy", "would_send"},
		Records: []any{rep}}
	l.Cells = [][]string{{strconv.Itoa(rep.LegacySends), strconv.Itoa(rep.LegacyNotices), strconv.Itoa(rep.Duplicates),
		strconv.Itoa(rep.OutsideWindow), strconv.Itoa(rep.MissedByLegacy), strconv.Itoa(rep.WouldSend)}}
	return l.Print(e.stdout, format)
}
