package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"scan/internal/ledger"
	"scan/internal/notice"
)

// lookupRow is one notice as `scan lookup --json` prints it: the ledger
// row, the digest of the message its current attempt handed over, and the
// provider evidence kept for each attempt.
type lookupRow struct {
	ledger.Row
	PeriodStart   string            `json:"period_start"`
	MessageSHA256 string            `json:"message_sha256,omitempty"`
	Evidence      []ledger.Evidence `json:"evidence"`
}

func cmdLookup(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "lookup", "SUBSCRIPTION_ID [--json]")
	asJSON := fs.Bool("json", false, "JSON lines instead of a table")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("SUBSCRIPTION_ID", "exactly one subscription id is required")
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := ledger.BySubscription(ctx, db, pos[0])
	if err != nil {
		return err
	}
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.NoticeKey
	}
	ev, err := ledger.EvidenceOf(ctx, db, keys)
	if err != nil {
		return err
	}
	if *asJSON || !isTerminal(e.stdout) {
		enc := json.NewEncoder(e.stdout)
		for _, r := range rows {
			out := lookupRow{Row: r, PeriodStart: r.Period(), MessageSHA256: r.Digest(), Evidence: ev[r.NoticeKey]}
			if out.Evidence == nil {
				out.Evidence = []ledger.Evidence{}
			}
			if err := enc.Encode(out); err != nil {
				return err
			}
		}
		return nil
	}
	if err := printRows(e, rows, false, "no ledger rows for that subscription: no notice was claimed or sent"); err != nil {
		return err
	}
	return printEvidence(e.stdout, rows, ev)
}

// printEvidence writes, under lookup's table, each notice's digest and the
// evidence kept for each of its attempts.
func printEvidence(w io.Writer, rows []ledger.Row, ev map[string][]ledger.Evidence) error {
	for _, r := range rows {
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
		es := ev[r.NoticeKey]
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
