package preview_test

import (
	"errors"
	"testing"

	"scan/internal/cli"
	"scan/internal/policy"
	"scan/internal/preview"
)

func TestRequestValidate(t *testing.T) {
	pol := policy.Default()
	kind := pol.Notices[0].Kind
	for _, c := range []struct {
		name string
		req  preview.Request
		err  string // "field: message"; "" when valid
	}{
		{"unknown kind", preview.Request{Subscription: "s", Source: "subscriptions", Kinds: []string{"nope"}},
			`--kind: "nope" is not a kind of the policy (` + preview.KindNames(pol) + ")"},
		{"out with subscription", preview.Request{Subscription: "s", Source: "subscriptions", Out: "d"},
			"--out: belongs to the sample form (scan preview --kind K --locale L --out DIR); with --subscription the row's own values are used"},
		{"locale with subscription", preview.Request{Subscription: "s", Source: "subscriptions", Locales: []string{"en"}},
			"--locale: belongs to the sample form (scan preview --kind K --locale L --out DIR); with --subscription the row's own values are used"},
		{"jurisdiction with subscription", preview.Request{Subscription: "s", Source: "subscriptions", Jurisdiction: "US-CA"},
			"--jurisdiction: belongs to the sample form (scan preview --kind K --locale L --out DIR); with --subscription the row's own values are used"},
		{"bad source", preview.Request{Subscription: "s", Source: "a.b.c"}, `--source: source "a.b.c": at most schema.relation`},
		{"samples without out", preview.Request{Kinds: []string{kind}},
			"--out: required: the directory the sample notices are written to (or give --subscription ID to preview one subscription's notice)"},
		{"bad locale", preview.Request{Out: "d", Locales: []string{"!!"}}, `--locale: "!!" is not a BCP 47 language tag such as en or de-AT`},
		{"bad jurisdiction", preview.Request{Out: "d", Jurisdiction: "../x"}, `--jurisdiction: "../x" is not a jurisdiction name such as US-CA`},
		{"subscription", preview.Request{Subscription: "s", Source: "public.subscriptions", Kinds: []string{kind}}, ""},
		{"samples", preview.Request{Out: "d", Kinds: []string{kind}, Locales: []string{"de-AT"}, Jurisdiction: "US-CA"}, ""},
	} {
		err := c.req.Validate(pol)
		var ue *cli.UsageError
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (!errors.As(err, &ue) || err.Error() != c.err):
			t.Errorf("%s: %v; want %s", c.name, err, c.err)
		}
	}
}
