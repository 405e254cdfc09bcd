package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"

	"scan/internal/cli"
	"scan/internal/drain"
	"scan/internal/ledger"
	"scan/internal/reconcile"
)

// sources are the flags of `scan reconcile` that name where the evidence
// comes from; --older-than is the CLI's time flag.
type sources struct {
	reconcile.Sources
	olderThan *cli.TimeFlag
}

func sourceFlags(fs *pflag.FlagSet) *sources {
	s := &sources{olderThan: cli.NewTimeFlag("15m")}
	fs.StringVar(&s.SQS, "sqs", "", "drain this SQS queue (its URL) of SES events, SNS-enveloped or raw; each message is deleted once what it said is committed")
	fs.DurationVar(&s.Budget, "receive-for", drain.DefaultBudget, "with --sqs: stop receiving after this long (0: only when the queue is empty)")
	// --max-duration is the pass's budget in scan run; here it was the
	// receive time. The old spelling still works, hidden.
	fs.DurationVar(&s.Budget, "max-duration", drain.DefaultBudget, "the same as --receive-for")
	_ = fs.MarkHidden("max-duration")
	fs.StringVar(&s.Ask, "ask", "", "ask this provider's API (postmark, mailgun, sendgrid) about each claim in quarantine")
	fs.Var(s.olderThan, "older-than", "with --ask: only claims older than this: a duration (15m, 2d) or an RFC 3339 instant")
	return s
}

// reconcileSQS is `scan reconcile --sqs QUEUE_URL`: it drains the queue
// (drain.Run) and prints each change as it is committed, then the summary
// of `scan reconcile` with what the queue gave and kept.
func reconcileSQS(ctx context.Context, e *env, src reconcile.Sources, by string) error {
	client, err := drain.NewClient(context.Background(), e.getenv, src.SQS)
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
	cfg := drain.Config{API: client, QueueURL: src.SQS, Format: src.Format, By: by, Now: e.clockNow}
	if src.Budget > 0 {
		cfg.Deadline = e.clockNow().Add(src.Budget)
	}
	out := json.NewEncoder(e.stdout)
	res, err := drain.Run(ctx, db, cfg, func(c ledger.Change) error { return out.Encode(c) })
	for _, id := range res.KeptIDs {
		fmt.Fprintf(e.stderr, "scan reconcile: SQS message %s kept for the queue's redrive policy: it is not a readable %s event\n", id, src.Format)
	}
	if n := res.Kept - len(res.KeptIDs); n > 0 {
		fmt.Fprintf(e.stderr, "scan reconcile: %d more unreadable messages kept, not listed\n", n)
	}
	pushReconcile(ctx, e, src.Format, res.Result)
	if err != nil {
		return err
	}
	return out.Encode(res.Summary(src.Format))
}
