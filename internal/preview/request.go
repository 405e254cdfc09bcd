package preview

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"
	"golang.org/x/text/language"

	"scan/internal/address"
	"scan/internal/cli"
	"scan/internal/job"
	"scan/internal/policy"
	"scan/internal/scan"
	"scan/internal/subscription"
)

// Request is what an operator asks of scan preview: the notices of one
// subscription read from Source (Subscription), or sample notices of
// Kinds, Locales and Jurisdiction written into Out.
type Request struct {
	Subscription, Source, Jurisdiction, Out string
	Kinds, Locales                          []string
}

// Validate checks the flags and their combinations against pol; a
// mistake is a *cli.UsageError naming the flag.
func (r Request) Validate(pol *policy.Policy) error {
	for _, k := range r.Kinds {
		if _, ok := pol.Kind(k); !ok {
			return cli.Usagef("--kind", "%q is not a kind of the policy (%s)", k, KindNames(pol))
		}
	}
	if r.Subscription != "" {
		for _, other := range []struct{ name, val string }{{"--out", r.Out}, {"--locale", strings.Join(r.Locales, ",")}, {"--jurisdiction", r.Jurisdiction}} {
			if other.val != "" {
				return cli.Usagef(other.name, "belongs to the sample form (scan preview --kind K --locale L --out DIR); with --subscription the row's own values are used")
			}
		}
		if _, err := subscription.QuoteRelation(r.Source); err != nil {
			return cli.Usagef("--source", "%v", err)
		}
		return nil
	}
	if r.Out == "" {
		return cli.Usagef("--out", "required: the directory the sample notices are written to (or give --subscription ID to preview one subscription's notice)")
	}
	for _, l := range r.Locales {
		if tag, err := language.Parse(l); err != nil || tag == language.Und {
			return cli.Usagef("--locale", "%q is not a BCP 47 language tag such as en or de-AT", l)
		}
	}
	if j := r.Jurisdiction; j != "" && (!address.ValidHeaderValue(j) || strings.ContainsAny(j, `/\.`)) {
		return cli.Usagef("--jurisdiction", "%q is not a jurisdiction name such as US-CA", j)
	}
	return nil
}

// OfSubscription is scan preview --subscription: the previews of the
// request's subscription (Of), by a pass at now that claims and sends
// nothing.
func (r Request) OfSubscription(ctx context.Context, db *sqlx.DB, log zerolog.Logger, pol *policy.Policy, renderer scan.Renderer, secret []byte, now time.Time) ([]Preview, error) {
	src, err := job.OpenSource(ctx, db, pol, r.Source, 0, 1)
	if err != nil {
		return nil, err
	}
	sc, err := scan.New(db, nil, renderer, log, scan.Config{Policy: pol, Secret: secret, Source: src, RunID: "preview-" + job.NewRunID(now), Now: now})
	if err != nil {
		return nil, err
	}
	previews, err := Of(ctx, sc, renderer, pol, now, r.Subscription, r.Kinds)
	if errors.Is(err, scan.ErrNoSubscription) {
		return nil, fmt.Errorf("preview: no subscription %q in %s", r.Subscription, r.Source)
	}
	return previews, err
}
