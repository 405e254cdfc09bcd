package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"scan/internal/cli"
	"scan/internal/ledger"
	"scan/internal/notice"
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
	rows := make([]ledger.Row, len(hs))
	for i, h := range hs {
		rows[i] = h.Row
	}
	l := rowsListing(rows, "")
	if format == cli.JSON {
		l.Records = l.Records[:0]
		for _, h := range hs {
			l.Records = append(l.Records, h)
		}
	}
	if err := l.Print(e.stdout, format); err != nil || format != cli.Table {
		return err
	}
	return printEvidence(e.stdout, hs)
}

// printEvidence writes, under lookup's table, each notice's digest and the
// evidence kept for each of its attempts.
func printEvidence(w io.Writer, hs []ledger.History) error {
	for _, h := range hs {
		r := h.Row
		digest := r.Digest()
		if digest == "" {
			digest = "- (no message handed over in this attempt)"
		}
		fmt.Fprintf(w, "\n%s %s %s rev %d by %s: %d attempt(s), now %s\n  sha256 of the message handed over: %s\n",
			notice.Short(r.NoticeKey), r.Kind, r.Period(), r.Revision, r.Channel, r.Attempts, r.State, digest)
		if r.Rule != nil {
			fmt.Fprintf(w, "  deadline: %s, in %s\n", *r.Rule, orDash(r.TimeZone))
		}
		if r.Reason != nil {
			fmt.Fprintf(w, "  reason: %s\n", *r.Reason)
		}
		if r.Sender != nil {
			fmt.Fprintf(w, "  sender: %s\n", *r.Sender)
		}
		es := h.Evidence
		if len(es) == 0 {
			fmt.Fprintln(w, "  no provider evidence kept")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ATTEMPT\tKIND\tAT\tEVENT\tDETAIL")
		for _, e := range es {
			at := "-"
			if e.At != nil {
				at = e.At.UTC().Format(time.RFC3339)
			}
			detail := e.Detail
			if detail == "" {
				detail = "-"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", e.Attempt, e.Kind, at, e.Event, detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func orDash(p *string) string {
	if p == nil || *p == "" {
		return "-"
	}
	return *p
}
