package suppress

import (
	"errors"
	"testing"

	"scan/internal/cli"
)

func TestEntryValidate(t *testing.T) {
	for _, c := range []struct {
		name               string
		req                Entry
		channel, norm, err string // err: "field: message", "" when valid
	}{
		{"neither", Entry{Reason: "r"}, "", "", "--email: give exactly one of --email ADDR or --phone NUMBER"},
		{"both", Entry{Email: "a@example.com", Phone: "+14155550100", Reason: "r"}, "", "", "--email: give exactly one of --email ADDR or --phone NUMBER"},
		{"bad email", Entry{Email: "nobody", Reason: "r"}, "", "", "--email: not a usable email address (a phone number must be E.164, e.g. +14155550100)"},
		{"bad phone", Entry{Phone: "4155550100", Reason: "r"}, "", "", "--phone: not a usable sms address (a phone number must be E.164, e.g. +14155550100)"},
		{"blank reason", Entry{Email: "a@example.com", Reason: " "}, "", "", "--reason: required: say why; it is recorded"},
		{"email", Entry{Email: "A@Example.com", Reason: "asked"}, "email", "a@example.com", ""},
		{"phone", Entry{Phone: "+14155550100", Reason: "asked"}, "sms", "+14155550100", ""},
	} {
		ch, norm, err := c.req.Validate()
		var ue *cli.UsageError
		switch {
		case c.err == "" && (err != nil || ch != c.channel || norm != c.norm):
			t.Errorf("%s: %q %q %v; want %q %q", c.name, ch, norm, err, c.channel, c.norm)
		case c.err != "" && (!errors.As(err, &ue) || err.Error() != c.err):
			t.Errorf("%s: %v; want %s", c.name, err, c.err)
		}
	}
}

func TestImportRequestValidate(t *testing.T) {
	for _, c := range []struct {
		req ImportRequest
		err string
	}{
		{ImportRequest{From: "x.csv"}, "--channel: required: email or sms"},
		{ImportRequest{From: "x.csv", Channel: "fax"}, "--channel: required: email or sms"},
		{ImportRequest{Channel: "sms"}, "--from: required: a CSV file"},
		{ImportRequest{From: "x.csv", Channel: "email"}, ""},
	} {
		err := c.req.Validate()
		var ue *cli.UsageError
		if (c.err == "" && err != nil) || (c.err != "" && (!errors.As(err, &ue) || err.Error() != c.err)) {
			t.Errorf("%+v: %v; want %q", c.req, err, c.err)
		}
	}
}
