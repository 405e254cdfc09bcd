package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"scan/internal/backfill"
	"scan/internal/cli"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/observe"
	"scan/internal/provider"
	"scan/internal/reconcile"
	"scan/internal/status"
)

var quarantineCommand = command{use: "quarantine", short: "claims with no recorded outcome, oldest first (--older-than D|T, --limit N, -o json|csv|table)",
	env: envDB, flags: quarantineFlags}

// quarantineFlags declares scan quarantine's flags.
func quarantineFlags(fs *pflag.FlagSet) runFunc {
	older := cli.NewTimeFlag("15m")
	fs.Var(older, "older-than", "only claims older than this: a duration (15m, 2d) or an RFC 3339 instant")
	limit := fs.Int("limit", 500, "at most this many rows (a cut list says so, with the total, on stderr)")
	out := cli.OutputFlag(fs, false)
	return func(ctx context.Context, e *env, _ []string) error { return cmdQuarantine(ctx, e, older, *limit, out) }
}

func cmdQuarantine(ctx context.Context, e *env, older *cli.TimeFlag, limit int, out *cli.Output) error {
	format, err := outputFormat(e, out)
	if err != nil {
		return err
	}
	if limit < 1 || limit > 1_000_000 {
		return usagef("--limit", "must be between 1 and 1000000")
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, total, err := status.QuarantineList(ctx, db, older.Instant(e.clockNow()), limit)
	if err != nil {
		return err
	}
	if err := status.Rows(rows, "quarantine is empty: every claim has a recorded outcome").Print(e.stdout, format); err != nil {
		return err
	}
	if total <= limit {
		return nil
	}
	// An operator after a crash must not take the first page for all of it.
	note := fmt.Sprintf("the list is cut at --limit %d: it shows the oldest %d of %d claims with no recorded outcome; raise --limit to see the rest", limit, len(rows), total)
	fmt.Fprintln(e.stderr, "scan: quarantine: "+note)
	if format == cli.Table {
		_, err = fmt.Fprintln(e.stdout, "... "+note)
	}
	return err
}

var resolveCommand = command{use: "resolve KEY", short: "an operator's decision on one claim, or a run's (--sent|--not-sent|--retry --reason TEXT)",
	long: "--not-sent and --retry both make the notice retry. A key or run that matches nothing is exit 1.",
	env:  []string{"DATABASE_URL", "USER"}, maxArgs: 1, flags: resolveFlags}

// resolveFlags declares scan resolve's flags.
func resolveFlags(fs *pflag.FlagSet) runFunc {
	var r reconcile.Resolution
	fs.StringVar(&r.RunID, "run", "", "decide for every claim of this run that still has no outcome (after a crash, once reconcile has settled what the provider saw)")
	fs.BoolVar(&r.Sent, "sent", false, "the notice went out (evidence outside the provider's events)")
	fs.BoolVar(&r.NotSent, "not-sent", false, "the notice certainly did not go out: make it retry (the same as --retry)")
	fs.BoolVar(&r.Retry, "retry", false, "send it again in the next pass while its window is open (also for failed)")
	fs.StringVar(&r.Reason, "reason", "", "why (required; recorded)")
	fs.StringVar(&r.By, "by", "", "who decides (default $USER)")
	return func(ctx context.Context, e *env, pos []string) error { return cmdResolve(ctx, e, r, pos) }
}

func cmdResolve(ctx context.Context, e *env, r reconcile.Resolution, pos []string) error {
	if len(pos) == 1 {
		r.Key = pos[0]
	}
	r.By = cmp.Or(r.By, e.getenv("USER"))
	d, err := r.Decision(e.clockNow().UTC())
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	enc := json.NewEncoder(e.stdout)
	// Each change is printed as it is committed; for a run, then the count.
	n, err := reconcile.Resolve(ctx, db, r, d, func(key string, from ledger.State) error {
		return enc.Encode(map[string]any{"notice_key": key, "from": from, "to": d.To, "by": d.By, "reason": d.Reason, "at": d.At})
	})
	if err != nil || r.RunID == "" {
		return err
	}
	return enc.Encode(map[string]any{"run_id": r.RunID, "resolved": n})
}

var reconcileCommand = command{use: "reconcile", short: "settle quarantined claims from provider events (--events FILE|-), an SQS queue (--sqs URL) or the provider's API (--ask P)",
	long: "--format names the events' format (the input); the summary is JSON on stdout.",
	env:  append([]string{"DATABASE_URL", "PUSHGATEWAY_URL", "AWS_REGION", "AWS_ENDPOINT_URL_SQS"}, envAsk...), flags: reconcileFlags}

// reconcileFlags declares scan reconcile's flags.
func reconcileFlags(fs *pflag.FlagSet) runFunc {
	src := sourceFlags(fs)
	fs.StringVar(&src.Events, "events", "", "provider events (see --format); - for stdin")
	fs.StringVar(&src.Format, "format", reconcile.FormatJSONL, reconcile.FormatJSONL+" (message_id, event per line), or the payloads "+cli.OrList(provider.Strings(provider.Email...))+" post (with --sqs: default "+string(provider.SES)+")")
	by := fs.String("by", "reconcile", "recorded as the author of each change")
	return func(ctx context.Context, e *env, _ []string) error {
		return cmdReconcile(ctx, e, fs, src, *by)
	}
}

func cmdReconcile(ctx context.Context, e *env, fs *pflag.FlagSet, src *sources, by string) error {
	src.FormatSet, src.OlderThanSet = isSet(fs, "format"), isSet(fs, "older-than")
	for _, name := range []string{"max-duration", "receive-for"} { // the spelling the operator typed
		if src.BudgetFlag == "" && isSet(fs, name) {
			src.BudgetFlag = "--" + name
		}
	}
	if err := src.Validate(); err != nil {
		return err
	}
	switch {
	case src.SQS != "":
		return reconcileSQS(ctx, e, src.Sources, by)
	case src.Ask != "":
		return reconcileAsk(ctx, e, src, by)
	}
	if err := checkPushURL(e.getenv("PUSHGATEWAY_URL")); err != nil {
		return err
	}
	in, closeIn, err := openEvents(e, src.Events)
	if err != nil {
		return err
	}
	defer closeIn()
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	out := json.NewEncoder(e.stdout)
	res, err := reconcile.Apply(ctx, db, in, reconcile.Options{Format: src.Format, By: by, Now: e.clockNow},
		func(c ledger.Change) error { return out.Encode(c) })
	if err != nil {
		return err
	}
	for _, p := range res.Problems {
		fmt.Fprintf(e.stderr, "scan reconcile: line %d skipped: %s\n", p.Line, p.Reason)
	}
	if n := res.Malformed + res.Oversized - len(res.Problems); n > 0 {
		fmt.Fprintf(e.stderr, "scan reconcile: %d more skipped payloads not listed\n", n)
	}
	pushReconcile(ctx, e, src.Format, res)
	return out.Encode(res.Summary(src.Format))
}

// pushReconcile pushes scan_reconcile_events_total when PUSHGATEWAY_URL
// is set; a failed push is reported on stderr and never fails the run.
func pushReconcile(ctx context.Context, e *env, format string, res reconcile.Result) {
	if err := observe.PushReconcile(ctx, e.getenv("PUSHGATEWAY_URL"), format, res); err != nil {
		fmt.Fprintf(e.stderr, "scan reconcile: %v (the events were applied)\n", err)
	}
}

var backfillCommand = command{use: "backfill", short: "import notices an earlier system already sent (--from FILE.csv)",
	env: []string{"DATABASE_URL", "NOTICE_KEY_SECRET", "SCAN_CONFIG"}, flags: backfillFlags}

// backfillFlags declares scan backfill's flags.
func backfillFlags(fs *pflag.FlagSet) runFunc {
	from := fs.String("from", "", "CSV: subscription_id,period_start,kind,revision,sent_at")
	return func(ctx context.Context, e *env, _ []string) error { return cmdBackfill(ctx, e, fs, from) }
}

func cmdBackfill(ctx context.Context, e *env, fs *pflag.FlagSet, from *string) error {
	if *from == "" {
		return usagef("--from", "required: a CSV file (subscription_id,period_start,kind,revision,sent_at)")
	}
	sec, err := secret(e)
	if err != nil {
		return err
	}
	pol, err := loadPolicy(e, fs, "")
	if err != nil {
		return err
	}
	f, err := os.Open(*from)
	if err != nil {
		return usagef("--from", "%v", err)
	}
	defer f.Close()
	k, err := notice.NewKeyer(sec)
	if err != nil {
		return err
	}
	b, err := backfill.Prepare(f, k, pol.MessageIDDomain)
	if err != nil {
		return usagef("--from", "%s: %v; nothing was written", *from, err)
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	rep, err := b.Import(ctx, db, "backfill-"+newRunID(e.clockNow()))
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(rep)
}
