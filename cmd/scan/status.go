package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

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

// errNeedsPerson ends `scan status` with exit 1 when something needs a
// person, after the status was printed, so that it can serve as a probe.
var errNeedsPerson = errors.New("status: needs a person")

// cmdStatus prints the ledger's status (internal/status): read-only.
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
	if err != nil || len(s.Problems) == 0 {
		return err
	}
	return errors.Join(errNeedsPerson, errors.New(strings.Join(s.Problems, "; ")))
}
