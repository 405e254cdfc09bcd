package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"scan/internal/ask"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/provider"
)

// askProviders are the providers --ask knows, in the order a usage error
// lists them.
var askProviders = provider.Strings(provider.Postmark, provider.Mailgun, provider.SendGrid, provider.Twilio)

// reconcileAsk is `scan reconcile --ask PROVIDER`: it asks the provider's
// API about each claim in quarantine older than --older-than
// (ask.Reconcile), prints each change as it is committed and each claim
// that stays (pending or unknown) on stderr, then a summary.
func reconcileAsk(ctx context.Context, e *env, src *reconcileSources, by string) error {
	p, err := newAskProvider(e, src.ask)
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
			fmt.Fprintf(e.stderr, "scan reconcile: %s has no record of %s yet; it stays in quarantine until the provider's indexing delay has passed\n", src.ask, notice.Short(c.Key))
		case a.Unknown != "":
			fmt.Fprintf(e.stderr, "scan reconcile: %s cannot tell about %s (%s); it stays in quarantine\n", src.ask, notice.Short(c.Key), a.Unknown)
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
	events := map[string]int{}
	for _, k := range ledger.EventKinds {
		events[string(k)] = res.Events[k]
	}
	return out.Encode(map[string]any{"ask": src.ask, "asked": res.Asked, "answered": res.Answered, "not_found": res.NotFound,
		"pending": res.Pending, "unknown": res.Unknown, "settled": res.Settled, "already_settled": res.Unchanged,
		"stale": res.Stale, "events": events})
}

// newAskProvider builds the provider --ask names from its environment.
// SES has no API that answers for one message: a usage error says so.
func newAskProvider(e *env, name string) (ask.Provider, error) {
	if build, ok := testAskProviders[name]; ok {
		return build(e)
	}
	switch provider.Name(name) {
	case provider.SES:
		return nil, usagef("--ask", "Amazon SES has no API that tells what became of one message: settle SES claims from its events (--sqs QUEUE_URL, --events FILE --format ses, or scan receive)")
	case provider.Postmark:
		token := e.getenv("POSTMARK_SERVER_TOKEN")
		if token == "" {
			return nil, usagef("POSTMARK_SERVER_TOKEN", "required with --ask postmark: a server token of the server the notices go through")
		}
		cfg, err := askClient(e, "POSTMARK_API_URL")
		if err != nil {
			return nil, err
		}
		// The Messages API is searched by the notice_key metadata, which
		// messages carry only with the policy's provider postmark: without
		// it every claim would look unsent.
		if err := askNeedsProvider(e, provider.Postmark); err != nil {
			return nil, err
		}
		return ask.NewPostmark(token, cfg)
	case provider.Mailgun:
		key, domain := e.getenv("MAILGUN_API_KEY"), e.getenv("MAILGUN_DOMAIN")
		if key == "" {
			return nil, usagef("MAILGUN_API_KEY", "required with --ask mailgun")
		}
		if domain == "" {
			return nil, usagef("MAILGUN_DOMAIN", "required with --ask mailgun: the sending domain the notices go through")
		}
		cfg, err := askClient(e, "MAILGUN_API_URL")
		if err != nil {
			return nil, err
		}
		p, err := ask.NewMailgun(key, domain, cfg)
		if err != nil {
			return nil, usagef("MAILGUN_DOMAIN", "%v", err)
		}
		return p, nil
	case provider.SendGrid:
		key := e.getenv("SENDGRID_API_KEY")
		if key == "" {
			return nil, usagef("SENDGRID_API_KEY", "required with --ask sendgrid: a key with read access to Email Logs")
		}
		cfg, err := askClient(e, "SENDGRID_API_URL")
		if err != nil {
			return nil, err
		}
		// Email Logs give each message's custom_args, the unique_args that
		// messages carry only with the policy's provider sendgrid.
		if err := askNeedsProvider(e, provider.SendGrid); err != nil {
			return nil, err
		}
		return ask.NewSendGrid(key, cfg)
	case provider.Twilio:
		return newTwilioAsker(e)
	}
	return nil, usagef("--ask", "%q is not one of %v (ses has no such API)", name, askProviders)
}

// askClient reads a provider's base URL variable.
func askClient(e *env, variable string) (ask.ClientConfig, error) {
	base := e.getenv(variable)
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return ask.ClientConfig{}, usagef(variable, "%q is not an http(s) URL", base)
		}
	}
	return ask.ClientConfig{BaseURL: base}, nil
}

// askNeedsProvider refuses --ask when the policy's provider is not the
// one asked: the messages would not carry what the API is searched by.
func askNeedsProvider(e *env, want provider.Name) error {
	pol, err := policy.LoadAt(e.getenv("SCAN_CONFIG"), e.clockNow())
	if err != nil {
		return err
	}
	if pol.Provider != string(want) {
		return usagef("provider", "the policy's provider is %q: --ask %s finds messages by the metadata that provider %s adds; set provider: %s in the policy (SCAN_CONFIG) first", pol.Provider, want, want, want)
	}
	return nil
}
