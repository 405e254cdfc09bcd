package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"scan/internal/ask"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/provider/registry"
)

// reconcileAsk is `scan reconcile --ask PROVIDER`: it asks the provider's
// API about each claim in quarantine older than --older-than
// (ask.Reconcile), prints each change as it is committed and each claim
// that stays (pending or unknown) on stderr, then a summary.
func reconcileAsk(ctx context.Context, e *env, src *sources, by string) error {
	p, err := newAskProvider(e, src.Ask)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	out := json.NewEncoder(e.stdout)
	note := func(c ask.Claim, a ask.Answer) {
		switch {
		case a.Pending:
			fmt.Fprintf(e.stderr, "scan reconcile: %s has no record of %s yet; it stays in quarantine until the provider's indexing delay has passed\n", src.Ask, notice.Short(c.Key))
		case a.Unknown != "":
			fmt.Fprintf(e.stderr, "scan reconcile: %s cannot tell about %s (%s); it stays in quarantine\n", src.Ask, notice.Short(c.Key), a.Unknown)
		}
	}
	res, err := ask.Reconcile(ctx, db, p, ask.RunConfig{By: by, OlderThan: src.olderThan.Ago(e.clockNow()), Now: e.clockNow},
		func(c ledger.Change) error { return out.Encode(c) }, note)
	if errors.Is(err, ask.ErrUnsupported) && res.Settled == 0 {
		// The account cannot answer (SendGrid without Email Logs): a
		// configuration matter, and nothing was written.
		return usagef("--ask", "%v", err)
	}
	if err != nil {
		return err
	}
	if res.Cut {
		fmt.Fprintf(e.stderr, "scan reconcile: asked about %d claims, the oldest the provider still keeps a record of; run it again for the rest\n", res.Asked)
	}
	return out.Encode(res.Summary(src.Ask))
}

// newAskProvider builds the provider --ask names from its environment
// (registry.NewAsker), the policy's provider from SCAN_CONFIG; a wrong
// setting is a usage error naming it.
func newAskProvider(e *env, name string) (ask.Provider, error) {
	if build, ok := testAskProviders[name]; ok {
		return build(e)
	}
	a, err := registry.NewAsker(name, e.getenv, func() (string, error) {
		pol, err := policy.LoadAt(e.getenv("SCAN_CONFIG"), e.clockNow())
		if err != nil {
			return "", err
		}
		return pol.Provider, nil
	})
	return a, err
}
