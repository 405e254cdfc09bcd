package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"scan/internal/cli"
	"scan/internal/drain"
	"scan/internal/ledger"
	"scan/internal/provider"
	"scan/internal/reconcile"
)

// defaultDrainBudget is --max-duration of `scan reconcile --sqs`: a
// little less than the CronJob's 5-minute period, so that one drain ends
// before the next is due (concurrencyPolicy: Forbid would skip it).
const defaultDrainBudget = 4 * time.Minute

// reconcileSources are the flags of `scan reconcile` that name where the
// evidence comes from besides --events: an SQS queue, or a provider's API.
type reconcileSources struct {
	sqs       string
	ask       string
	budget    time.Duration
	olderThan *cli.TimeFlag
}

func sourceFlags(fs *pflag.FlagSet) *reconcileSources {
	s := &reconcileSources{olderThan: cli.NewTimeFlag("15m")}
	fs.StringVar(&s.sqs, "sqs", "", "drain this SQS queue (its URL) of SES events, SNS-enveloped or raw; each message is deleted once what it said is committed")
	fs.DurationVar(&s.budget, "receive-for", defaultDrainBudget, "with --sqs: stop receiving after this long (0: only when the queue is empty)")
	// --max-duration is the pass's budget in scan run; here it was the
	// receive time. The old spelling still works, hidden.
	fs.DurationVar(&s.budget, "max-duration", defaultDrainBudget, "the same as --receive-for")
	_ = fs.MarkHidden("max-duration")
	fs.StringVar(&s.ask, "ask", "", "ask this provider's API (postmark, mailgun, sendgrid) about each claim in quarantine")
	fs.Var(s.olderThan, "older-than", "with --ask: only claims older than this: a duration (15m, 2d) or an RFC 3339 instant")
	return s
}

// check refuses a command line that names more than one source, or a flag
// of one source with another.
func (s *reconcileSources) check(fs *pflag.FlagSet, events string) error {
	budget := "--receive-for"
	if isSet(fs, "max-duration") {
		budget = "--max-duration" // the spelling the operator typed
	}
	n := 0
	for _, v := range []string{events, s.sqs, s.ask} {
		if v != "" {
			n++
		}
	}
	switch {
	case n > 1:
		return usagef("--events", "give one of --events, --sqs and --ask")
	case (isSet(fs, "receive-for") || isSet(fs, "max-duration")) && s.sqs == "":
		return usagef(budget, "only with --sqs")
	case isSet(fs, "older-than") && s.ask == "":
		return usagef("--older-than", "only with --ask")
	case s.budget < 0:
		return usagef(budget, "must not be negative")
	}
	return nil
}

// reconcileSQS is `scan reconcile --sqs QUEUE_URL`: it drains the queue
// (drain.Run) and prints each change as it is committed, then the summary
// of `scan reconcile` with what the queue gave and kept.
func reconcileSQS(ctx context.Context, e *env, fs *pflag.FlagSet, src *reconcileSources, format, by string) error {
	if !isSet(fs, "format") {
		format = string(provider.SES)
	}
	if !slices.Contains(reconcile.Formats, format) || format == reconcile.FormatJSONL {
		return usagef("--format", "%q: with --sqs, one of %s (default %s)", format, strings.Join(provider.Strings(provider.Email...), ", "), provider.SES)
	}
	client, err := drain.NewClient(context.Background(), e.getenv, src.sqs)
	var ce *drain.ConfigError
	if errors.As(err, &ce) {
		return usagef(ce.Field, "%s", ce.Msg)
	}
	if err != nil {
		return err
	}
	if err := checkPushURL(e.getenv("PUSHGATEWAY_URL")); err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	cfg := drain.Config{API: client, QueueURL: src.sqs, Format: format, By: by, Now: e.clockNow}
	if src.budget > 0 {
		cfg.Deadline = e.clockNow().Add(src.budget)
	}
	out := json.NewEncoder(e.stdout)
	res, err := drain.Run(ctx, db, cfg, func(c ledger.Change) error { return out.Encode(c) })
	for _, id := range res.KeptIDs {
		fmt.Fprintf(e.stderr, "scan reconcile: SQS message %s kept for the queue's redrive policy: it is not a readable %s event\n", id, format)
	}
	if n := res.Kept - len(res.KeptIDs); n > 0 {
		fmt.Fprintf(e.stderr, "scan reconcile: %d more unreadable messages kept, not listed\n", n)
	}
	pushReconcile(ctx, e, format, res.Result)
	if err != nil {
		return err
	}
	return out.Encode(res.Summary(format))
}
