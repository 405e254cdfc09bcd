package senders

import (
	"errors"
	"strings"
	"testing"
)

// Every setting a sender cannot take is a *ConfigError naming the
// variable, before anything is built; what production or a staging
// redirect allows is allowed.
func TestPrepareNamesTheVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		names []string
		vars  map[string]string
		prod  bool
		field string // "": accepted
	}{
		{"outbox", []string{Outbox}, nil, false, ""},
		{"smtp unset", []string{SMTP}, nil, false, "SMTP_URL"},
		{"smtp scheme", []string{SMTP}, map[string]string{"SMTP_URL": "http://127.0.0.1:25"}, false, "SMTP_URL"},
		{"smtp no host", []string{SMTP}, map[string]string{"SMTP_URL": "smtp://:25"}, false, "SMTP_URL"},
		{"smtp loopback", []string{SMTP}, map[string]string{"SMTP_URL": "smtp://127.0.0.1:25"}, false, ""},
		{"smtp remote in staging", []string{SMTP}, map[string]string{"SMTP_URL": "smtp://mail.example.com:587"}, false, "SMTP_URL"},
		{"smtp remote in production", []string{SMTP}, map[string]string{"SMTP_URL": "smtp://mail.example.com:587"}, true, ""},
		{"http unset", []string{HTTP}, nil, false, "SCAN_HTTP_URL"},
		{"plain http off loopback", []string{HTTP}, map[string]string{"SCAN_HTTP_URL": "http://api.example.com/x"}, true, "SCAN_HTTP_URL"},
		{"second of a list", []string{Outbox, SMTP}, nil, false, "SMTP_URL"},
		{"ses in staging", []string{SES}, map[string]string{"AWS_REGION": "eu-west-1"}, false, "SCAN_SENDER"},
		{"ses bad endpoint", []string{SES}, map[string]string{"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "ftp://x"}, true, "AWS_ENDPOINT_URL"},
		{"ses remote sesv2 endpoint in staging", []string{SES}, map[string]string{"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL_SESV2": "https://ses.example.com"}, false, "AWS_ENDPOINT_URL_SESV2"},
		{"ses stand-in", []string{SES}, map[string]string{"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) string { return tc.vars[k] }
			_, err := Prepare(Config{Names: tc.names, Getenv: getenv, Production: tc.prod, Pool: 1})
			var ce *ConfigError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.field != "" && (!errors.As(err, &ce) || ce.Field != tc.field):
				t.Errorf("got %v, want a *ConfigError naming %s", err, tc.field)
			}
		})
	}
}

// The sms channel's API is a stand-in on loopback outside production, and
// a staging redirect turns the channel off.
func TestSMSOutsideProduction(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"TWILIO_ACCOUNT_SID": "AC" + strings.Repeat("0", 32), "TWILIO_AUTH_TOKEN": "token", "TWILIO_FROM": "+15005550006"}
	getenv := func(k string) string { return vars[k] }
	_, err := SMS(Config{Getenv: getenv}, nil)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "TWILIO_API_URL" {
		t.Errorf("Twilio's own API outside production: %v, want a *ConfigError naming TWILIO_API_URL", err)
	}
	if c, err := SMS(Config{Getenv: getenv, Redirect: "qa@example.net"}, nil); c != nil || err != nil {
		t.Errorf("with a staging redirect: %v, %v; want no client", c, err)
	}
	if c, err := SMS(Config{Getenv: getenv, Production: true}, nil); c == nil || err != nil {
		t.Errorf("in production: %v, %v; want a client", c, err)
	}
	delete(vars, "TWILIO_AUTH_TOKEN")
	if _, err := SMS(Config{Getenv: getenv, Production: true}, nil); !errors.As(err, &ce) || ce.Field != "TWILIO_AUTH_TOKEN" {
		t.Errorf("without TWILIO_AUTH_TOKEN: %v, want a *ConfigError naming it", err)
	}
}
