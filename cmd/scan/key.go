package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"scan/internal/notice"
)

var keyCommand = command{use: "key", short: "print a notice key (--subscription ID --period-start DATE --kind KIND [--revision N] [--channel sms])",
	env: []string{"NOTICE_KEY_SECRET"}, flags: keyFlags}

// keyFlags declares scan key's flags.
func keyFlags(fs *pflag.FlagSet) runFunc {
	var k keyArgs
	fs.StringVar(&k.sub, "subscription", "", "subscription id")
	fs.StringVar(&k.period, "period-start", "", "billing period start, YYYY-MM-DD")
	fs.StringVar(&k.kind, "kind", "", "notice kind")
	fs.IntVar(&k.rev, "revision", 0, "notice revision")
	fs.StringVar(&k.channel, "channel", notice.ChannelEmail, "email or sms (an sms notice's key material ends in |sms)")
	return func(_ context.Context, e *env, _ []string) error { return cmdKey(e, &k) }
}

// keyArgs are scan key's flags.
type keyArgs struct {
	sub, period, kind, channel string
	rev                        int
}

func cmdKey(e *env, a *keyArgs) error {
	if !notice.ValidChannel(a.channel) {
		return usagef("--channel", "%q is not email or sms", a.channel)
	}
	sec, err := secret(e)
	if err != nil {
		return err
	}
	if a.sub == "" {
		return usagef("--subscription", "required")
	}
	ps, err := time.Parse(notice.DateLayout, a.period)
	if err != nil {
		return usagef("--period-start", "%q is not a date YYYY-MM-DD", a.period)
	}
	if err := notice.ValidateKind(a.kind); err != nil {
		return usagef("--kind", "%v", err)
	}
	if a.rev < 0 {
		return usagef("--revision", "must be 0 or more")
	}
	k, err := notice.NewKeyer(sec)
	if err != nil {
		return usagef("NOTICE_KEY_SECRET", "%v", err)
	}
	_, err = fmt.Fprintln(e.stdout, k.ChannelKey(notice.Tuple{SubscriptionID: a.sub, PeriodStart: ps, Kind: a.kind, Revision: a.rev}, a.channel))
	return err
}
