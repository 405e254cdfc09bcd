package registry

import (
	"fmt"
	"net/url"

	"scan/internal/ask"
)

// NewAsker builds the pull API `--ask name` names from the settings
// (getenv), as its package's ask.Spec says: its settings, its API's base
// URL, and, when the API finds messages by the metadata its provider adds,
// the policy's provider (policyProvider), which must be name. A provider
// without such an API, an unknown name, or a wrong setting is an
// *ask.ConfigError naming what to fix; policyProvider's own error is
// returned as it is.
func NewAsker(name string, getenv func(string) string, policyProvider func() (string, error)) (ask.Provider, error) {
	p, ok := Lookup(name)
	switch {
	case ok && p.Ask == nil && p.NoAsk != "":
		return nil, &ask.ConfigError{Field: "--ask", Msg: p.NoAsk}
	case !ok || p.Ask == nil:
		return nil, &ask.ConfigError{Field: "--ask", Msg: fmt.Sprintf("%q is not one of %v (ses has no such API)", name, Askers())}
	}
	if err := p.Ask.Settings(getenv); err != nil {
		return nil, err
	}
	cfg, err := askClient(getenv, p.Ask.BaseURLVar)
	if err != nil {
		return nil, err
	}
	if p.Ask.ByMetadata {
		pol, err := policyProvider()
		if err != nil {
			return nil, err
		}
		if pol != string(p.Name) {
			want := p.Name
			return nil, &ask.ConfigError{Field: "provider", Msg: fmt.Sprintf("the policy's provider is %q: --ask %s finds messages by the metadata that provider %s adds; set provider: %s in the policy (SCAN_CONFIG) first", pol, want, want, want)}
		}
	}
	return p.Ask.New(getenv, cfg)
}

// askClient reads a provider's base URL variable ("": none).
func askClient(getenv func(string) string, variable string) (ask.ClientConfig, error) {
	if variable == "" {
		return ask.ClientConfig{}, nil
	}
	base := getenv(variable)
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return ask.ClientConfig{}, &ask.ConfigError{Field: variable, Msg: fmt.Sprintf("%q is not an http(s) URL", base)}
		}
	}
	return ask.ClientConfig{BaseURL: base}, nil
}
