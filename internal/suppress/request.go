package suppress

import (
	"strings"

	"scan/internal/cli"
	"scan/internal/notice"
)

// Entry is what scan suppress add and remove are asked: exactly one of
// an email address and a phone number, and why.
type Entry struct{ Email, Phone, Reason string }

// Validate checks the flags and returns the entry's channel and its
// address normalized; a mistake is a *cli.UsageError naming the flag.
func (r Entry) Validate() (channel, normalized string, err error) {
	channel, raw := notice.ChannelEmail, r.Email
	switch {
	case (r.Email == "") == (r.Phone == ""):
		return "", "", cli.Usagef("--email", "give exactly one of --email ADDR or --phone NUMBER")
	case r.Phone != "":
		channel, raw = notice.ChannelSMS, r.Phone
	}
	norm, ok := normalize(channel, raw)
	if !ok {
		field := map[string]string{notice.ChannelEmail: "--email", notice.ChannelSMS: "--phone"}[channel]
		return "", "", cli.Usagef(field, "not a usable %s address (a phone number must be E.164, e.g. +14155550100)", channel)
	}
	if strings.TrimSpace(r.Reason) == "" {
		return "", "", cli.Usagef("--reason", "required: say why; it is recorded")
	}
	return channel, norm, nil
}

// ImportRequest is what scan suppress import is asked: a provider's
// export (From) for one channel, and the reason for rows that give none.
type ImportRequest struct{ From, Channel, Reason string }

// Validate checks the flags; a mistake is a *cli.UsageError naming the
// flag.
func (r ImportRequest) Validate() error {
	if !notice.ValidChannel(r.Channel) {
		return cli.Usagef("--channel", "required: email or sms")
	}
	if r.From == "" {
		return cli.Usagef("--from", "required: a CSV file")
	}
	return nil
}
