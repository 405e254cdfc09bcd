package preview

import (
	"fmt"
	"io"
	"strings"

	"scan/internal/notice"
	"scan/internal/policy"
)

// Write prints p's channels in the kind's order on stdout: the email
// (headers and text) and the sms text (writeSMS), and on stderr why a
// pass would not text it. sep: a blank
// line first (not the first notice printed).
func Write(stdout, stderr io.Writer, pol *policy.Policy, p Preview, sep bool) error {
	k, _ := pol.Kind(p.Kind)
	if k.SMSFirst() {
		if err := writeSMS(stdout, stderr, pol, p, sep); err != nil {
			return err
		}
		sep = sep || (p.SMS != nil && p.SMS.Invalid == "")
	}
	if p.Message != nil && !smsOnly(pol, p.Kind) {
		if sep {
			fmt.Fprintln(stdout)
		}
		if _, err := stdout.Write(HeadersAndText(p.Message)); err != nil {
			return err
		}
		sep = true
	}
	if !k.SMSFirst() {
		return writeSMS(stdout, stderr, pol, p, sep)
	}
	return nil
}

// writeSMS prints the sms text of p, for a kind whose channels
// include sms: a header line with the channel, its encoding and segment
// count, then the body; on stderr why a pass would not text it, if so.
// sep: a blank line first (not the first notice printed).
func writeSMS(stdout, stderr io.Writer, pol *policy.Policy, p Preview, sep bool) error {
	sp := p.SMS
	if sp == nil {
		return nil
	}
	if sp.Invalid != "" {
		fmt.Fprintf(stderr, "scan: %s: sms: a pass would not text it: %s\n", p.Kind, sp.Invalid)
		return nil
	}
	if sep {
		fmt.Fprintln(stdout)
	}
	plural := "s"
	if sp.Segments == 1 {
		plural = ""
	}
	order := "sms"
	if k, ok := pol.Kind(p.Kind); ok && !smsOnly(pol, p.Kind) {
		order = "sms (channels: [" + strings.Join(k.Channels, ", ") + "])"
	}
	_, err := fmt.Fprintf(stdout, "Channel: %s\nEncoding: %s, %d segment%s\n\n%s\n", order, sp.Encoding, sp.Segments, plural, sp.Text)
	return err
}

// smsOnly reports whether kind goes by sms alone ([sms]): its preview
// shows no email.
func smsOnly(pol *policy.Policy, kind string) bool {
	k, ok := pol.Kind(kind)
	return ok && len(k.Channels) == 1 && k.Channels[0] == notice.ChannelSMS
}
