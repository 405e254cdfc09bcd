package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"scan/internal/cli"
	"scan/internal/ledger"
	"scan/internal/status"
)

var lookupCommand = command{use: "lookup SUBSCRIPTION_ID", short: "every ledger row of one subscription: did this notice go out? (-o json|csv|table)",
	long: "The id is the argument or --subscription ID. A subscription with no ledger row is exit 1.",
	env:  []string{"DATABASE_URL"}, maxArgs: 1, flags: lookupFlags}

// lookupFlags declares scan lookup's flags.
func lookupFlags(fs *pflag.FlagSet) runFunc {
	sub := fs.String("subscription", "", "the subscription id (or give it as the argument)")
	out := cli.OutputFlag(fs, false)
	return func(ctx context.Context, e *env, args []string) error {
		id := *sub
		switch {
		case len(args) == 1 && id != "" && args[0] != id:
			return usagef("SUBSCRIPTION_ID", "give the id once: as the argument or as --subscription")
		case len(args) == 1:
			id = args[0]
		case id == "":
			return usagef("SUBSCRIPTION_ID", "exactly one subscription id is required (the argument, or --subscription ID)")
		}
		return cmdLookup(ctx, e, id, out)
	}
}

func cmdLookup(ctx context.Context, e *env, id string, out *cli.Output) error {
	format, err := outputFormat(e, out)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	hs, err := ledger.Lookup(ctx, db, id)
	if err != nil {
		return err
	}
	if len(hs) == 0 {
		return fmt.Errorf("lookup: no ledger row for subscription %q: no notice of it was claimed or sent", id)
	}
	return status.WriteLookup(e.stdout, hs, format)
}
