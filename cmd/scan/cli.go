package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"scan/internal/cli"
)

// runFunc is a command's body: it runs once cobra has parsed the flags,
// with the positional arguments.
type runFunc func(ctx context.Context, e *env, args []string) error

// command is one of scan's commands, or a group of them (suppress,
// shadow). Adding a command is one file declaring a command value and one
// line in commands.
type command struct {
	use   string   // the name, then the arguments: "lookup [SUBSCRIPTION_ID]"
	short string   // the line `scan --help` shows
	long  string   // more, for the command's own help (optional)
	env   []string // the variables it reads, named in its help (envHelp says what each is)
	// maxArgs is how many positional arguments it takes at most; the body
	// checks what they must be.
	maxArgs int
	// flags declares the command's flags on fs and returns its body; nil
	// for a group.
	flags func(fs *pflag.FlagSet) runFunc
	subs  []*command // a group's commands
}

// commands are scan's commands, in the order `scan --help` lists them.
// The lead registers a new command here (e.g. &statusCommand).
var commands = []*command{
	&migrateCommand, &runCommand, &scheduleCommand, &lookupCommand, &quarantineCommand,
	&undeliveredCommand, &reconcileCommand, &resolveCommand, &recoverCommand, &receiveCommand,
	&backfillCommand, &suppressCommand, &shadowCommand, &previewCommand, &keyCommand,
	&pruneCommand, &proofCommand, &versionCommand, &statusCommand,
}

// envHelp is one line per variable for the commands' help (the contract's
// table says more).
var envHelp = map[string]string{
	"DATABASE_URL":                "PostgreSQL URL or keyword string (required)",
	"NOTICE_KEY_SECRET":           "HMAC secret, at least 32 bytes (required)",
	"NOTICE_KEY_SECRET_PREVIOUS":  "earlier secrets after a rotation, comma-separated",
	"SCAN_CONFIG":                 "policy file (same as --config)",
	"SCAN_SENDER":                 "outbox, smtp, http or ses, or a failover list (same as --sender)",
	"SCAN_MAX_DURATION":           "time budget of one pass (same as --max-duration)",
	"SCAN_OUTBOX_DIR":             "where the outbox sender writes; default ./outbox",
	"SMTP_URL":                    "with --sender smtp: smtp://[user:pass@]host:port or smtps://",
	"SCAN_HTTP_URL":               "with --sender http: the endpoint of one JSON POST per notice",
	"SCAN_ENVIRONMENT":            "production lets senders reach non-loopback hosts",
	"SCAN_REDIRECT_TO":            "deliver every notice to this one address (staging)",
	"PUSHGATEWAY_URL":             "push the run's metrics there",
	"LOG_LEVEL":                   "debug, info (default), warn or error",
	"JOB_COMPLETION_INDEX":        "the shard index with --shards (Kubernetes indexed Job)",
	"AWS_REGION":                  "with --sender ses or --sqs (or the SDK's standard chain)",
	"AWS_ENDPOINT_URL_SQS":        "overrides the SQS endpoint",
	"SCAN_RECEIVE_ADDR":           "where to listen (same as --listen)",
	"SENDGRID_WEBHOOK_PUBLIC_KEY": "verifies /events/sendgrid",
	"MAILGUN_WEBHOOK_SIGNING_KEY": "verifies /events/mailgun",
	"POSTMARK_WEBHOOK_USER":       "with POSTMARK_WEBHOOK_PASSWORD: verifies /events/postmark",
	"SNS_TOPIC_ARNS":              "topics /events/ses takes, comma-separated",
	"SNS_CERT_HOSTS":              "hosts an SNS signing certificate URL may name",
	"TWILIO_ACCOUNT_SID":          "with channel sms (and TWILIO_AUTH_TOKEN, TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID)",
	"TWILIO_AUTH_TOKEN":           "with channel sms; also verifies /events/twilio",
	"POSTMARK_SERVER_TOKEN":       "with --ask postmark",
	"MAILGUN_API_KEY":             "with --ask mailgun (and MAILGUN_DOMAIN)",
	"SENDGRID_API_KEY":            "with --ask sendgrid",
	"SCAN_CPUPROFILE":             "write a CPU profile of the pass to this file",
	"USER":                        "the default of --by",
}

// Variable sets several commands share.
var (
	envDB   = []string{"DATABASE_URL", "LOG_LEVEL"}
	envPass = []string{"DATABASE_URL", "NOTICE_KEY_SECRET", "SCAN_CONFIG", "SCAN_SENDER", "SCAN_MAX_DURATION",
		"SCAN_OUTBOX_DIR", "SMTP_URL", "SCAN_HTTP_URL", "SCAN_ENVIRONMENT", "SCAN_REDIRECT_TO", "PUSHGATEWAY_URL",
		"LOG_LEVEL", "JOB_COMPLETION_INDEX", "AWS_REGION", "TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN"}
	envAsk = []string{"POSTMARK_SERVER_TOKEN", "MAILGUN_API_KEY", "SENDGRID_API_KEY"}
)

// name is the command's name, the first word of use.
func (c *command) name() string { return strings.Fields(c.use)[0] }

// build turns c into a cobra command whose body runs with e.
func (c *command) build(e *env) *cobra.Command {
	cc := &cobra.Command{Use: c.use, Short: c.short, Long: cli.EnvHelp(c.short, c.long, c.env, envHelp),
		SilenceErrors: true, SilenceUsage: true, SuggestionsMinimumDistance: 2}
	if c.flags == nil {
		names := make([]string, len(c.subs))
		for i, s := range c.subs {
			cc.AddCommand(s.build(e))
			names[i] = s.name()
		}
		cli.Group(cc, names, e.redact)
		return cc
	}
	body := c.flags(cc.Flags())
	cc.Args = cli.MaxArgs(c.maxArgs, e.redact)
	cc.RunE = func(cc *cobra.Command, args []string) error { return body(cc.Context(), e, args) }
	return cc
}

// newRoot builds scan's command tree for one run with e.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "scan",
		Short: "scan sends subscription-renewal notices exactly when policy allows, and never twice",
		Long: "scan sends subscription-renewal notices exactly when policy allows, and never twice.\n\n" +
			"Exit codes: 0 done; 1 aborted, or nothing matched (lookup, resolve); 2 usage or configuration\n" +
			"error, nothing written; 3 refused by --max-mint; 4 refused after a restore (run scan recover).",
		SilenceErrors: true, SilenceUsage: true, SuggestionsMinimumDistance: 2,
	}
	for _, c := range commands {
		root.AddCommand(c.build(e))
	}
	cli.Root(root, e.redact)
	return root
}
