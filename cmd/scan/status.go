package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/pflag"

	"scan/internal/cli"
	"scan/internal/status"
)

var statusCommand = command{use: "status",
	short: "one screen: last passes, quarantine, retry, missed, recovery needed, receiver (-o json|table); exit 1 when something needs a person",
	env:   envDB, flags: statusFlags}

// statusFlags declares scan status's flags.
func statusFlags(fs *pflag.FlagSet) runFunc {
	out := cli.OutputFlag(fs, false)
	return func(ctx context.Context, e *env, _ []string) error { return cmdStatus(ctx, e, out) }
}

// cmdStatus prints the ledger's status (internal/status): read-only. It
// ends with exit 1 when something needs a person (Status.Err).
func cmdStatus(ctx context.Context, e *env, out *cli.Output) error {
	format, err := outputFormat(e, out)
	if err != nil {
		return err
	}
	if format == cli.CSV {
		return usagef("-o", "status prints json or table, not csv")
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := status.Report(ctx, db, e.clockNow(), status.Options{})
	if err != nil {
		return err
	}
	if format == cli.JSON {
		err = json.NewEncoder(e.stdout).Encode(s)
	} else {
		err = status.WriteTable(e.stdout, s)
	}
	if err != nil {
		return err
	}
	return s.Err()
}
