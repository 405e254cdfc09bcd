package main

import (
	"fmt"
	"strings"

	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/scan"
)

// writeSMSPreview prints the sms text of p, for a kind whose channels
// include sms: a header line with the channel, its encoding and segment
// count, then the body; on stderr why a pass would not text it, if so.
// sep: a blank line first (not the first notice printed).
func writeSMSPreview(e *env, pol *policy.Policy, p scan.Preview, sep bool) error {
	sp := p.SMS
	if sp == nil {
		return nil
	}
	if sp.Invalid != "" {
		fmt.Fprintf(e.stderr, "scan: %s: sms: a pass would not text it: %s\n", p.Kind, sp.Invalid)
		return nil
	}
	if sep {
		fmt.Fprintln(e.stdout)
	}
	plural := "s"
	if sp.Segments == 1 {
		plural = ""
	}
	order := "sms"
	if k, ok := pol.Kind(p.Kind); ok && !smsOnly(pol, p.Kind) {
		order = "sms (channels: [" + strings.Join(k.Channels, ", ") + "])"
	}
	_, err := fmt.Fprintf(e.stdout, "Channel: %s\nEncoding: %s, %d segment%s\n\n%s\n", order, sp.Encoding, sp.Segments, plural, sp.Text)
	return err
}

// smsOnly reports whether kind goes by sms alone ([sms]): its preview
// shows no email.
func smsOnly(pol *policy.Policy, kind string) bool {
	k, ok := pol.Kind(kind)
	return ok && len(k.Channels) == 1 && k.Channels[0] == notice.ChannelSMS
}
