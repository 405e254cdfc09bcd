package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"

	"scan/internal/backfill"
	"scan/internal/ledger"
	"scan/internal/metrics"
	"scan/internal/notice"
	"scan/internal/provider"
	"scan/internal/reconcile"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// printRows writes ledger rows as JSON lines, or as a table on a terminal.
func printRows(e *env, rows []ledger.Row, asJSON bool, empty string) error {
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		for _, r := range rows {
			out := struct {
				ledger.Row
				PeriodStart string `json:"period_start"`
			}{r, r.Period()}
			if err := enc.Encode(out); err != nil {
				return err
			}
		}
		return nil
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(e.stdout, empty)
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSUBSCRIPTION\tKIND\tPERIOD\tREV\tSTATE\tCLAIMED\tSENT\tATTEMPTS\tLAST ERROR")
	for _, r := range rows {
		sent := "-"
		if r.SentAt != nil {
			sent = r.SentAt.UTC().Format(time.RFC3339)
		}
		lastErr := "-"
		if r.LastError != nil {
			lastErr = *r.LastError
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\n", notice.Short(r.NoticeKey), r.SubscriptionID, r.Kind, r.Period(), r.Revision,
			r.State, r.ClaimedAt.UTC().Format(time.RFC3339), sent, r.Attempts, lastErr)
	}
	return tw.Flush()
}

func cmdQuarantine(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "quarantine", "[--older-than 15m] [--limit 500] [--json]")
	older := fs.Duration("older-than", 15*time.Minute, "only claims older than this")
	limit := fs.Int("limit", 500, "at most this many rows (a cut list says so, with the total, on stderr)")
	asJSON := fs.Bool("json", false, "JSON lines even on a terminal")
	if err := parseNoArgs(fs, args, ""); err != nil {
		return err
	}
	if *older < 0 {
		return usagef("--older-than", "must not be negative")
	}
	if *limit < 1 || *limit > 1_000_000 {
		return usagef("--limit", "must be between 1 and 1000000")
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	before := e.clockNow().Add(-*older)
	// One row more than the limit tells whether the list is cut; only then
	// is the whole counted.
	rows, err := ledger.Quarantine(ctx, db, before, *limit+1)
	if err != nil {
		return err
	}
	total := len(rows)
	if total > *limit {
		rows = rows[:*limit]
		if total, err = ledger.QuarantineCount(ctx, db, before); err != nil {
			return err
		}
	}
	table := !*asJSON && isTerminal(e.stdout)
	if err := printRows(e, rows, !table, "quarantine is empty: every claim has a recorded outcome"); err != nil {
		return err
	}
	if total <= *limit {
		return nil
	}
	// An operator after a crash must not take the first page for all of it.
	note := fmt.Sprintf("the list is cut at --limit %d: it shows the oldest %d of %d claims with no recorded outcome; raise --limit to see the rest", *limit, len(rows), total)
	fmt.Fprintln(e.stderr, "scan: quarantine: "+note)
	if table {
		_, err = fmt.Fprintln(e.stdout, "... "+note)
	}
	return err
}

func cmdResolve(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "resolve", "KEY|--run RUN_ID --sent|--not-sent|--retry --reason TEXT [--by NAME]")
	runID := fs.String("run", "", "decide for every claim of this run that still has no outcome (after a crash, once reconcile has settled what the provider saw)")
	sent := fs.Bool("sent", false, "the notice went out (evidence outside the provider's events)")
	notSent := fs.Bool("not-sent", false, "the notice certainly did not go out: make it retry")
	retry := fs.Bool("retry", false, "send it again in the next pass while its window is open (also for failed)")
	reason := fs.String("reason", "", "why (required; recorded)")
	by := fs.String("by", "", "who decides (default $USER)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *runID != "" && len(pos) == 0 {
		pos = []string{""}
	} else if len(pos) != 1 || !notice.ValidKey(pos[0]) || *runID != "" {
		return usagef("KEY", "exactly one notice key (64 lower-case hex characters), or --run RUN_ID, is required")
	}
	var ruling ledger.Ruling
	n := 0
	for _, f := range []struct {
		set bool
		r   ledger.Ruling
	}{{*sent, ledger.RulingSent}, {*notSent, ledger.RulingNotSent}, {*retry, ledger.RulingRetry}} {
		if f.set {
			ruling = f.r
			n++
		}
	}
	if n != 1 {
		return usagef("decision", "give exactly one of --sent, --not-sent, --retry")
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("--reason", "required: say why, it is recorded with the decision")
	}
	who := *by
	if who == "" {
		who = e.getenv("USER")
	}
	if who == "" {
		return usagef("--by", "required when $USER is not set")
	}
	d, err := ledger.NewDecision(ruling, pos[0], who, *reason, e.clockNow().UTC())
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	enc := json.NewEncoder(e.stdout)
	if *runID != "" {
		// Each change is printed as it is committed, then the count.
		n, err := ledger.ResolveRun(ctx, db, *runID, d, func(key string, from ledger.State) error {
			return enc.Encode(map[string]any{"notice_key": key, "from": from, "to": d.To, "by": d.By, "reason": d.Reason, "at": d.At})
		})
		if errors.Is(err, ledger.ErrNoClaims) {
			return usagef("--run", "run %q has no claims without an outcome", *runID)
		}
		if err != nil {
			return err
		}
		return enc.Encode(map[string]any{"run_id": *runID, "resolved": n})
	}
	from, err := ledger.ResolveKey(ctx, db, d)
	if errors.Is(err, ledger.ErrNotFound) {
		return usagef("KEY", "no ledger row has key %s", notice.Short(pos[0]))
	}
	if errors.Is(err, ledger.ErrStateChanged) {
		return usagef("KEY", "%v; allowed from %v", err, d.From)
	}
	if err != nil {
		return err
	}
	return enc.Encode(map[string]any{"notice_key": pos[0], "from": from, "to": d.To, "by": who, "reason": *reason, "at": d.At})
}

func cmdReconcile(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "reconcile", "--events FILE|- [--format jsonl|ses|sendgrid|mailgun|postmark] | --sqs QUEUE_URL [--format ses] [--max-duration D] | --ask PROVIDER [--older-than 15m]")
	events := fs.String("events", "", "provider events (see --format); - for stdin")
	format := fs.String("format", reconcile.FormatJSONL, reconcile.FormatJSONL+" (message_id, event per line), or the payloads "+orList(provider.Strings(provider.Email...))+" post (with --sqs: default "+string(provider.SES)+")")
	by := fs.String("by", "reconcile", "recorded as the author of each change")
	src := sourceFlags(fs)
	if err := parseNoArgs(fs, args, "; use --events FILE"); err != nil {
		return err
	}
	if err := src.check(fs, *events); err != nil {
		return err
	}
	switch {
	case src.sqs != "":
		return reconcileSQS(ctx, e, fs, src, *format, *by)
	case src.ask != "":
		return reconcileAsk(ctx, e, src, *by)
	case *events == "":
		return usagef("--events", "required: a file of events, or - for stdin (or --sqs QUEUE_URL, or --ask PROVIDER)")
	}
	if !slices.Contains(reconcile.Formats, *format) {
		return usagef("--format", "%q is not one of %s", *format, strings.Join(reconcile.Formats, ", "))
	}
	if err := checkPushURL(e.getenv("PUSHGATEWAY_URL")); err != nil {
		return err
	}
	var in io.Reader = e.stdin
	if *events != "-" {
		f, err := os.Open(*events)
		if err != nil {
			return usagef("--events", "%v", err)
		}
		defer f.Close()
		in = f
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	out := json.NewEncoder(e.stdout)
	res, err := reconcile.Apply(ctx, db, in, reconcile.Options{Format: *format, By: *by, Now: e.clockNow},
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
	pushReconcile(ctx, e, *format, res)
	return out.Encode(reconcileSummary(*format, res))
}

// reconcileSummary is the JSON object `scan reconcile` ends with.
// unknown_message_id keeps its name from the jsonl days: it counts events
// that match no notice by key, provider id or Message-ID (or name an
// attempt the notice never had), and kept_unknown those of them kept as
// the second witness (a claim later minted for their key is recorded sent
// from them, not sent); already_settled counts the events kept
// as evidence only (recorded and duplicate). events counts the usable
// events by kind; stale those of an earlier attempt, which changed nothing.
func reconcileSummary(format string, res reconcile.Result) map[string]any {
	events := map[string]int{}
	for _, k := range ledger.EventKinds {
		events[string(k)] = res.Events[k]
	}
	return map[string]any{
		"format": format, "lines": res.Lines, "payloads": res.Payloads, "settled": res.Settled,
		"unknown_message_id": res.Unknown, "kept_unknown": res.KeptUnknown, "already_settled": res.Unchanged,
		"malformed": res.Malformed, "oversized": res.Oversized, "irrelevant": res.Irrelevant,
		"overruled": res.Overruled, "duplicate": res.Duplicate, "stale": res.Stale, "events": events,
	}
}

// pushReconcile pushes scan_reconcile_events_total when PUSHGATEWAY_URL
// is set; a failed push is reported on stderr and never fails the run.
func pushReconcile(ctx context.Context, e *env, format string, res reconcile.Result) {
	gw := e.getenv("PUSHGATEWAY_URL")
	if gw == "" {
		return
	}
	var counts []metrics.ReconcileCount
	for t, n := range res.Tally {
		counts = append(counts, metrics.ReconcileCount{Event: string(t.Event), Result: t.Result, N: n})
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushTimeout)
	defer cancel()
	if err := metrics.PushReconcile(pctx, gw, nil, format, reconcileLabels(), counts); err != nil {
		fmt.Fprintf(e.stderr, "scan reconcile: %v (the events were applied)\n", err)
	}
}

// reconcileLabels are scan_reconcile_events_total's label values: the
// ledger's event kinds and what reconcile says each event did.
func reconcileLabels() metrics.ReconcileLabels {
	events := make([]string, len(ledger.EventKinds))
	for i, k := range ledger.EventKinds {
		events[i] = string(k)
	}
	return metrics.ReconcileLabels{Events: events, Results: reconcile.Results}
}

func cmdBackfill(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "backfill", "--from FILE.csv")
	from := fs.String("from", "", "CSV: subscription_id,period_start,kind,revision,sent_at")
	if err := parseNoArgs(fs, args, "; use --from FILE.csv"); err != nil {
		return err
	}
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
	sends, err := backfill.ReadSends(f)
	if err != nil {
		return usagef("--from", "%s: %v; nothing was written", *from, err)
	}
	// A legacy sender that sent a notice twice wrote it twice: one row.
	recs := backfill.Unique(sends)
	k, err := notice.NewKeyer(sec)
	if err != nil {
		return err
	}
	bs := backfill.Notices(recs, k, pol.MessageIDDomain)
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := backfill.Import(ctx, db, "backfill-"+newRunID(e.clockNow()), bs)
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(map[string]int{"lines": len(sends), "notices": len(recs), "inserted": n, "already_in_ledger": len(recs) - n})
}
