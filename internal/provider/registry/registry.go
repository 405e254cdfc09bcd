// Package registry lists the providers, one line each: what the commands
// that serve every provider alike (`scan receive`, `scan reconcile
// --format`, the SQS drain) take from each provider's package
// (internal/provider/<name>). Adding a provider is its package and one
// line in init below.
//
// Importing the registry registers each provider's event format with
// package reconcile (reconcile.RegisterFormat), so that
// reconcile.ReadFormat, Apply and everything built on them read it.
package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"scan/internal/ask"
	"scan/internal/provider"
	"scan/internal/provider/mailgun"
	"scan/internal/provider/postmark"
	"scan/internal/provider/sendgrid"
	"scan/internal/provider/ses"
	"scan/internal/provider/twilio"
	"scan/internal/receive"
	"scan/internal/reconcile"
)

// Provider is one provider's parts, as its package makes them.
type Provider struct {
	Name provider.Name
	// Decode reads the payloads of its event format (the reconcile format
	// Name); nil when it has none (Twilio's status callbacks are forms its
	// webhook decodes).
	Decode reconcile.Decoder
	// Webhook makes its endpoint of `scan receive` from the settings
	// (getenv); an endpoint whose settings are unset accepts nothing, and
	// a wrong setting is a *receive.ConfigError naming it.
	Webhook func(getenv func(string) string) (receive.Endpoint, error)
	// WebhookVars names the settings that turn Webhook's endpoint on, for
	// the message when none is.
	WebhookVars string
	// Correlation returns the headers (name, value) that make the provider
	// echo a notice's key and attempt in its events (configSet is SES's
	// configuration set, "" for none); nil for a provider that is no email
	// provider the policy may name.
	Correlation func(key string, attempt int, configSet string) [][2]string
	// Ask is its pull API for `--ask`, nil when it has none; NoAsk then
	// says why, for the usage error.
	Ask   *ask.Spec
	NoAsk string
}

var providers []Provider

func init() {
	Register(Provider{Name: ses.Name, Decode: ses.Decode, Webhook: ses.Webhook, WebhookVars: ses.TopicsVar, Correlation: ses.CorrelationHeaders, NoAsk: ses.NoAsker})
	Register(Provider{Name: sendgrid.Name, Decode: sendgrid.Decode, Webhook: sendgrid.Webhook, WebhookVars: sendgrid.KeyVar, Correlation: sendgrid.CorrelationHeaders, Ask: &sendgrid.AskSpec})
	Register(Provider{Name: mailgun.Name, Decode: mailgun.Decode, Webhook: mailgun.Webhook, WebhookVars: mailgun.KeyVar, Correlation: mailgun.CorrelationHeaders, Ask: &mailgun.AskSpec})
	Register(Provider{Name: postmark.Name, Decode: postmark.Decode, Webhook: postmark.Webhook, WebhookVars: postmark.UserVar, Correlation: postmark.CorrelationHeaders, Ask: &postmark.AskSpec})
	Register(Provider{Name: twilio.Name, Webhook: twilio.Webhook, WebhookVars: twilio.AuthTokenVar + " with " + twilio.CallbackURLVar, Ask: &twilio.AskSpec})
}

// Register adds p to the providers, and its event format to reconcile's.
// init calls it for each provider above; a test calls it for a provider
// of its own. A name registered twice panics.
func Register(p Provider) {
	if slices.ContainsFunc(providers, func(q Provider) bool { return q.Name == p.Name }) {
		panic("registry: provider " + string(p.Name) + " registered twice")
	}
	if p.Decode != nil {
		reconcile.RegisterFormat(p.Name, p.Decode)
	}
	providers = append(providers, p)
}

// Lookup returns the provider of name.
func Lookup(name string) (Provider, bool) {
	for _, p := range providers {
		if string(p.Name) == name {
			return p, true
		}
	}
	return Provider{}, false
}

// Askers lists the providers with a pull API for `--ask`, in their order.
func Askers() []string {
	var names []string
	for _, p := range providers {
		if p.Ask != nil {
			names = append(names, string(p.Name))
		}
	}
	return names
}

// All returns the providers, in their order.
func All() []Provider { return slices.Clone(providers) }

// Endpoints returns every provider's endpoint of `scan receive`, made
// from the settings (getenv), in the providers' order; the first
// provider whose settings are wrong stops it (a *receive.ConfigError).
func Endpoints(getenv func(string) string) ([]receive.Endpoint, error) {
	var eps []receive.Endpoint
	for _, p := range providers {
		if p.Webhook == nil {
			continue
		}
		ep, err := p.Webhook(getenv)
		if err != nil {
			return nil, err
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

// Webhooks returns the endpoints of `scan receive` (Endpoints) when at
// least one provider's is configured; none at all is a
// *receive.ConfigError naming every setting that would turn one on (an
// endpoint without its secret accepts nothing).
func Webhooks(getenv func(string) string) ([]receive.Endpoint, error) {
	eps, err := Endpoints(getenv)
	if err != nil {
		return nil, err
	}
	for _, ep := range eps {
		if ep.Verify != nil {
			return eps, nil
		}
	}
	return nil, &receive.ConfigError{Field: strings.Join(WebhookVars(), ", "),
		Msg: "none is set: configure at least one provider's endpoint (an endpoint without its secret accepts nothing)"}
}

// WebhookVars lists the settings that turn each provider's endpoint on.
func WebhookVars() []string {
	var vs []string
	for _, p := range providers {
		if p.WebhookVars != "" {
			vs = append(vs, p.WebhookVars)
		}
	}
	return vs
}

// Correlation returns the function that gives each message of the
// policy's provider name the headers it echoes in its events (the
// renderer's RenderConfig.Correlation), with SES's configuration set
// configSet: nil for "" and "none" (no provider behind the sender). A
// name that is no registered email provider, or a configSet of anything
// but letters, digits, '-' and '_', is an error.
func Correlation(name, configSet string) (func(key string, attempt int) [][2]string, error) {
	if strings.Trim(configSet, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return nil, errors.New("the configuration set may hold only letters, digits, '-' and '_'")
	}
	if name == "" || name == string(provider.None) {
		return nil, nil
	}
	for _, p := range providers {
		if string(p.Name) == name && p.Correlation != nil {
			headers := p.Correlation
			return func(key string, attempt int) [][2]string { return headers(key, attempt, configSet) }, nil
		}
	}
	return nil, fmt.Errorf("%q is not none or an email provider (%s)", name, strings.Join(provider.Strings(provider.Email...), ", "))
}
