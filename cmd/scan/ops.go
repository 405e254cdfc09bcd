package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

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

// resolveArgs are scan resolve's flags.
type resolveArgs struct {
	runID, reason, by    string
	sent, notSent, retry bool
}

// resolveFlags declares scan resolve's flags.
func resolveFlags(fs *pflag.FlagSet) runFunc {
	var a resolveArgs
	fs.StringVar(&a.runID, "run", "", "decide for every claim of this run that still has no outcome (after a crash, once reconcile has settled what the provider saw)")
	fs.BoolVar(&a.sent, "sent", false, "the notice went out (evidence outside the provider's events)")
	fs.BoolVar(&a.notSent, "not-sent", false, "the notice certainly did not go out: make it retry (the same as --retry)")
	fs.BoolVar(&a.retry, "retry", false, "send it again in the next pass while its window is open (also for failed)")
	fs.StringVar(&a.reason, "reason", "", "why (required; recorded)")
	fs.StringVar(&a.by, "by", "", "who decides (default $USER)")
	return func(ctx context.Context, e *env, pos []string) error { return cmdResolve(ctx, e, &a, pos) }
}

func cmdResolve(ctx context.Context, e *env, a *resolveArgs, pos []string) error {
	if a.runID != "" && len(pos) == 0 {
		pos = []string{""}
	} else if len(pos) != 1 || !notice.ValidKey(pos[0]) || a.runID != "" {
		return usagef("KEY", "exactly one notice key (64 lower-case hex characters), or --run RUN_ID, is required")
	}
	var ruling ledger.Ruling
	n := 0
	for _, f := range []struct {
		set bool
		r   ledger.Ruling
	}{{a.sent, ledger.RulingSent}, {a.notSent, ledger.RulingNotSent}, {a.retry, ledger.RulingRetry}} {
		if f.set {
			ruling = f.r
			n++
		}
	}
	if n != 1 {
		return usagef("decision", "give exactly one of --sent, --not-sent, --retry")
	}
	if strings.TrimSpace(a.reason) == "" {
		return usagef("--reason", "required: say why, it is recorded with the decision")
	}
	who := a.by
	if who == "" {
		who = e.getenv("USER")
	}
	if who == "" {
		return usagef("--by", "required when $USER is not set")
	}
	d, err := ledger.NewDecision(ruling, pos[0], who, a.reason, e.clockNow().UTC())
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	enc := json.NewEncoder(e.stdout)
	change := func(key string, from ledger.State) error {
		return enc.Encode(map[string]any{"notice_key": key, "from": from, "to": d.To, "by": d.By, "reason": d.Reason, "at": d.At})
	}
	if a.runID != "" {
		// Each change is printed as it is committed, then the count.
		n, err := ledger.ResolveRun(ctx, db, a.runID, d, change)
		if errors.Is(err, ledger.ErrNoClaims) {
			return fmt.Errorf("resolve: run %q has no claims without an outcome", a.runID)
		}
		if err != nil {
			return err
		}
		return enc.Encode(map[string]any{"run_id": a.runID, "resolved": n})
	}
	from, err := ledger.ResolveKey(ctx, db, d)
	if errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("resolve: no ledger row has key %s", notice.Short(pos[0]))
	}
	if errors.Is(err, ledger.ErrStateChanged) {
		return usagef("KEY", "%v; allowed from %v", err, d.From)
	}
	if err != nil {
		return err
	}
	return change(pos[0], from)
}

var reconcileCommand = command{use: "reconcile", short: "settle quarantined claims from provider events (--events FILE|-), an SQS queue (--sqs URL) or the provider's API (--ask P)",
	long: "--format names the events' format (the input); the summary is JSON on stdout.",
	env:  append([]string{"DATABASE_URL", "PUSHGATEWAY_URL", "AWS_REGION", "AWS_ENDPOINT_URL_SQS"}, envAsk...), flags: reconcileFlags}

// reconcileFlags declares scan reconcile's flags.
func reconcileFlags(fs *pflag.FlagSet) runFunc {
	events := fs.String("events", "", "provider events (see --format); - for stdin")
	format := fs.String("format", reconcile.FormatJSONL, reconcile.FormatJSONL+" (message_id, event per line), or the payloads "+cli.OrList(provider.Strings(provider.Email...))+" post (with --sqs: default "+string(provider.SES)+")")
	by := fs.String("by", "reconcile", "recorded as the author of each change")
	src := sourceFlags(fs)
	return func(ctx context.Context, e *env, _ []string) error {
		return cmdReconcile(ctx, e, fs, src, *events, *format, *by)
	}
}

func cmdReconcile(ctx context.Context, e *env, fs *pflag.FlagSet, src *reconcileSources, events, format, by string) error {
	if err := src.check(fs, events); err != nil {
		return err
	}
	switch {
	case src.sqs != "":
		return reconcileSQS(ctx, e, fs, src, format, by)
	case src.ask != "":
		return reconcileAsk(ctx, e, src, by)
	case events == "":
		return usagef("--events", "required: a file of events, or - for stdin (or --sqs QUEUE_URL, or --ask PROVIDER)")
	}
	if !slices.Contains(reconcile.Formats, format) {
		return usagef("--format", "%q is not one of %s", format, strings.Join(reconcile.Formats, ", "))
	}
	if err := checkPushURL(e.getenv("PUSHGATEWAY_URL")); err != nil {
		return err
	}
	in, closeIn, err := openEvents(e, events)
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
	res, err := reconcile.Apply(ctx, db, in, reconcile.Options{Format: format, By: by, Now: e.clockNow},
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
	pushReconcile(ctx, e, format, res)
	return out.Encode(res.Summary(format))
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
