package main

import (
	"context"

	"scan/internal/cli"
	"scan/internal/ledger"
	"scan/internal/observe"
	"scan/internal/status"

	"github.com/spf13/pflag"
)

// cmdUndelivered is `scan undelivered`: the notices that reached the
// customer by no channel, for whoever calls them. No addresses: the
// ledger holds none. With PUSHGATEWAY_URL it also pushes their count by
// reason (scan_undelivered_notices), which ScanUndeliveredGrowing watches.
var undeliveredCommand = command{use: "undelivered", short: "notices that reached the customer by no channel, with the reason (--since D|T, -o json|csv|table)",
	env: []string{"DATABASE_URL", "PUSHGATEWAY_URL"}, flags: undeliveredFlags}

// undeliveredFlags declares scan undelivered's flags.
func undeliveredFlags(fs *pflag.FlagSet) runFunc {
	since := cli.NewTimeFlag("30d")
	fs.Var(since, "since", "notices whose rows last changed since then: a duration back (7d, 36h) or an RFC 3339 instant")
	limit := fs.Int("limit", 100000, "print at most N, oldest first")
	out := cli.OutputFlag(fs, true)
	return func(ctx context.Context, e *env, _ []string) error { return cmdUndelivered(ctx, e, since, *limit, out) }
}

func cmdUndelivered(ctx context.Context, e *env, since *cli.TimeFlag, limit int, out *cli.Output) error {
	format, err := outputFormat(e, out)
	if err != nil {
		return err
	}
	if limit < 1 {
		return usagef("--limit", "must be at least 1")
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	now := e.clockNow().UTC()
	list, err := ledger.Undelivered(ctx, db, since.Instant(now), now, limit)
	if err != nil {
		return err
	}
	if err := observe.PushUndelivered(ctx, e.getenv("PUSHGATEWAY_URL"), list); err != nil {
		return err
	}
	return status.Undelivered(list).Print(e.stdout, format)
}
