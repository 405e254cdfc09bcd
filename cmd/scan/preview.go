package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"scan/internal/cli"
	"scan/internal/job"
	"scan/internal/message"
	"scan/internal/policy"
	"scan/internal/preview"
)

// previewFlags are the flags of `scan preview`: a preview.Request.
type previewFlags struct {
	req            preview.Request
	config, now    string
	kinds, locales cli.ListFlag
}

// cmdPreview renders notices without claiming or sending them:
// `--subscription ID` prints what that subscription would get now,
// `--out DIR` writes sample notices from built-in sample data. Neither
// writes to the ledger or reaches a sender.
var previewCommand = command{use: "preview", short: "print the message a subscription would get now (--subscription ID), or write samples (--out DIR)",
	long: "--subscription ID [--kind K] [--now T]  |  --kind K --locale L [--jurisdiction J] --out DIR\nWrites nothing to the ledger; sends nothing.",
	env:  []string{"DATABASE_URL", "NOTICE_KEY_SECRET", "SCAN_CONFIG"}, flags: previewFlagsOf}

// previewFlagsOf declares scan preview's flags.
func previewFlagsOf(fs *pflag.FlagSet) runFunc {
	var f previewFlags
	fs.StringVar(&f.config, "config", "", "policy file (env SCAN_CONFIG); built-in defaults when empty")
	fs.StringVar(&f.req.Source, "source", "subscriptions", "table or view to read, schema-qualified allowed")
	fs.StringVar(&f.req.Subscription, "subscription", "", "print the message this subscription would get now (headers and text)")
	fs.Var(&f.kinds, "kind", "notice kind(s), repeatable or comma-separated; default: every kind due now (--subscription) or every kind of the policy (--out)")
	fs.Var(&f.locales, "locale", "BCP 47 locale(s) of the sample notices, repeatable or comma-separated; default the policy's default_locale")
	fs.StringVar(&f.req.Jurisdiction, "jurisdiction", "", "jurisdiction of the sample notices (its window)")
	fs.StringVar(&f.req.Out, "out", "", "directory the sample notices are written to (<kind>.<locale>[.<J>].eml, .txt, .html)")
	fs.StringVar(&f.now, "now", "", "render at this RFC3339 instant instead of the clock")
	return func(ctx context.Context, e *env, _ []string) error { return cmdPreview(ctx, e, fs, &f) }
}

func cmdPreview(ctx context.Context, e *env, fs *pflag.FlagSet, f *previewFlags) error {
	pol, err := loadPolicy(e, fs, f.config)
	if err != nil {
		return err
	}
	now, err := e.now(f.now)
	if err != nil {
		return err
	}
	r := f.req
	r.Kinds, r.Locales = f.kinds, f.locales
	if err := r.Validate(pol); err != nil {
		return err
	}
	renderer, err := job.Renderer(pol)
	if err != nil {
		return err
	}
	if r.Subscription != "" {
		return previewSubscription(ctx, e, pol, renderer, r, now)
	}
	if err := os.MkdirAll(r.Out, 0o755); err != nil {
		return usagef("--out", "cannot create the directory: %v", err)
	}
	wrote, err := preview.WriteSamples(r.Out, pol, renderer, preview.Samples{Kinds: r.Kinds, Locales: r.Locales, Jurisdiction: r.Jurisdiction, Now: now})
	for _, path := range wrote {
		fmt.Fprintln(e.stdout, path)
	}
	return err
}

// previewSubscription prints, for each kind asked (or due now), the
// message the subscription would get, and on stderr what a pass now would
// do with it.
func previewSubscription(ctx context.Context, e *env, pol *policy.Policy, renderer *message.Renderer, r preview.Request, now time.Time) error {
	sec, err := secret(e)
	if err != nil {
		return err
	}
	log, db, err := connect(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	previews, err := r.OfSubscription(ctx, db, log, pol, renderer, sec, now)
	if err != nil {
		return err
	}
	return preview.Print(e.stdout, e.stderr, pol, r.Subscription, previews, now)
}
