package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/text/language"

	"scan/internal/address"
	"scan/internal/cli"
	"scan/internal/message"
	"scan/internal/policy"
	"scan/internal/preview"
	"scan/internal/scan"
	"scan/internal/subscription"
)

// previewFlags are the flags of `scan preview`.
type previewFlags struct {
	config, source, subscription, now, jurisdiction, out string
	kinds, locales                                       cli.ListFlag
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
	fs.StringVar(&f.source, "source", "subscriptions", "table or view to read, schema-qualified allowed")
	fs.StringVar(&f.subscription, "subscription", "", "print the message this subscription would get now (headers and text)")
	fs.Var(&f.kinds, "kind", "notice kind(s), repeatable or comma-separated; default: every kind due now (--subscription) or every kind of the policy (--out)")
	fs.Var(&f.locales, "locale", "BCP 47 locale(s) of the sample notices, repeatable or comma-separated; default the policy's default_locale")
	fs.StringVar(&f.jurisdiction, "jurisdiction", "", "jurisdiction of the sample notices (its window)")
	fs.StringVar(&f.out, "out", "", "directory the sample notices are written to (<kind>.<locale>[.<J>].eml, .txt, .html)")
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
	for _, k := range f.kinds {
		if _, ok := pol.Kind(k); !ok {
			return usagef("--kind", "%q is not a kind of the policy (%s)", k, preview.KindNames(pol))
		}
	}
	renderer, err := newRenderer(pol)
	if err != nil {
		return err
	}
	if f.subscription != "" {
		for _, other := range []struct{ name, val string }{{"--out", f.out}, {"--locale", f.locales.String()}, {"--jurisdiction", f.jurisdiction}} {
			if other.val != "" {
				return usagef(other.name, "belongs to the sample form (scan preview --kind K --locale L --out DIR); with --subscription the row's own values are used")
			}
		}
		return previewSubscription(ctx, e, pol, renderer, f, now)
	}
	if f.out == "" {
		return usagef("--out", "required: the directory the sample notices are written to (or give --subscription ID to preview one subscription's notice)")
	}
	return previewSamples(e, pol, renderer, f, now)
}

// previewSubscription prints, for each kind asked (or due now), the
// message the subscription would get, and on stderr what a pass now would
// do with it.
func previewSubscription(ctx context.Context, e *env, pol *policy.Policy, renderer *message.Renderer, f *previewFlags, now time.Time) error {
	sec, err := secret(e)
	if err != nil {
		return err
	}
	if _, err := subscription.QuoteRelation(f.source); err != nil {
		return usagef("--source", "%v", err)
	}
	log, db, err := connect(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	src, err := openSource(ctx, db, pol, f.source, 0, 1)
	if err != nil {
		return err
	}
	sc, err := scan.New(db, nil, renderer, log, scan.Config{Policy: pol, Secret: sec, Source: src, RunID: "preview-" + newRunID(now), Now: now})
	if err != nil {
		return err
	}
	previews, err := preview.Of(ctx, sc, renderer, pol, now, f.subscription, f.kinds)
	if errors.Is(err, scan.ErrNoSubscription) {
		return fmt.Errorf("preview: no subscription %q in %s", f.subscription, f.source)
	}
	if err != nil {
		return err
	}
	return preview.Print(e.stdout, e.stderr, pol, f.subscription, previews, now)
}

// previewSamples writes a sample notice for each kind and locale asked,
// and prints the paths it wrote.
func previewSamples(e *env, pol *policy.Policy, renderer *message.Renderer, f *previewFlags, now time.Time) error {
	for _, l := range f.locales {
		if tag, err := language.Parse(l); err != nil || tag == language.Und {
			return usagef("--locale", "%q is not a BCP 47 language tag such as en or de-AT", l)
		}
	}
	if j := f.jurisdiction; j != "" && (!address.ValidHeaderValue(j) || strings.ContainsAny(j, `/\.`)) {
		return usagef("--jurisdiction", "%q is not a jurisdiction name such as US-CA", j)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return usagef("--out", "cannot create the directory: %v", err)
	}
	wrote, err := preview.WriteSamples(f.out, pol, renderer, preview.Samples{Kinds: f.kinds, Locales: f.locales, Jurisdiction: f.jurisdiction, Now: now})
	for _, path := range wrote {
		fmt.Fprintln(e.stdout, path)
	}
	return err
}
