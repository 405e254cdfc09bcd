package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"scan/internal/cli"
	"scan/internal/clock"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/observe"
	"scan/internal/policy"
	"scan/internal/redact"
	"scan/internal/scan"
	"scan/internal/usage"
)

// Exit codes, as the contract states them.
const (
	exitOK       = 0
	exitAborted  = 1
	exitUsage    = 2
	exitRefused  = 3
	exitRestored = 4
)

// usagef is a bad flag, argument, environment variable or config
// (a *cli.UsageError): exit 2, nothing written. Field names what to fix.
func usagef(field, format string, a ...any) error { return cli.Usagef(field, format, a...) }

// env is the process environment as the commands see it.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// secrets are the values that must never be printed (see
	// registerSecrets); redact replaces them. Per run, so that concurrent
	// runs in one process (tests) never share or reset each other's.
	secrets redact.Redactor
	// clock is the commands' source of the time; nil is clock.System.
	clock clock.Clock
}

// now returns the clock's time in UTC, or the instant of a --now flag
// (staging data) when it is set.
func (e *env) now(flagNow string) (time.Time, error) {
	if flagNow != "" {
		t, err := time.Parse(time.RFC3339, flagNow)
		if err != nil {
			return time.Time{}, usagef("--now", "%q is not an RFC3339 instant (e.g. 2026-11-30T02:00:00Z)", flagNow)
		}
		return t, nil
	}
	return e.clockNow().UTC(), nil
}

// clockNow returns the clock's time (with the system clock, its monotonic
// reading too, for durations).
func (e *env) clockNow() time.Time {
	if e.clock == nil {
		return clock.System{}.Now()
	}
	return e.clock.Now()
}

// loadPolicy reads the policy file named by the command's --config flag
// (val), else by SCAN_CONFIG; neither means the built-in default. Its
// schedule's gaps are measured over the year from the clock's now.
func loadPolicy(e *env, fs *pflag.FlagSet, val string) (*policy.Policy, error) {
	return policy.LoadAt(flagOrEnv(fs, "config", val, e, "SCAN_CONFIG"), e.clockNow())
}

// run is the whole program minus the process: tests call it directly.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	e := &env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr, clock: clock.System{}}
	// Before anything can print: every command, and every error path, is
	// covered.
	registerSecrets(e)
	defer func() {
		// A panic on this goroutine must not print a secret, nor exit 2
		// (the runtime's code for a panic), which the contract reserves
		// for "nothing was written". It ends the command as aborted.
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "scan: internal error (a bug; it is safe to run again): %s\n%s", e.redact(fmt.Sprint(p)), e.redact(string(debug.Stack())))
			code = exitAborted
		}
	}()
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = append([]string{"version"}, args[1:]...)
	}
	root := newRoot(e)
	root.SetArgs(cli.SingleDashLong(root, args))
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return exitCode(e, root.ExecuteContext(ctx))
}

// exitCode prints err on one line, redacted, and maps it to the
// contract's exit code: a configuration error of any package is exit 2.
func exitCode(e *env, err error) int {
	if err == nil {
		return exitOK
	}
	code, msg := exitAborted, cli.OneLine(e.redact(err.Error()))
	switch {
	case is[*usage.Error](err), is[*policy.Error](err): // every package's input error is a usage.Error
		code = exitUsage
	case errors.Is(err, scan.ErrMaxMint):
		code = exitRefused
	case errors.Is(err, ledger.ErrRestored):
		code = exitRestored
	case ledger.IsSplitStatement(err):
		msg += ": " + ledger.SplitStatementAdvice
	}
	fmt.Fprintf(e.stderr, "scan: %s\n", msg)
	return code
}

// is says whether err has an error of type T in its chain.
func is[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// flagOrEnv returns the flag's value when it was set, else the variable's.
func flagOrEnv(fs *pflag.FlagSet, name, val string, e *env, variable string) string {
	if isSet(fs, name) {
		return val
	}
	if v := e.getenv(variable); v != "" {
		return v
	}
	return val
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *pflag.FlagSet, name string) bool {
	return fs.Changed(name)
}

// fieldOf names what a usage error about a flag-or-variable setting
// points at: --name when the flag was given, else the variable.
func fieldOf(fs *pflag.FlagSet, name, variable string) string {
	if isSet(fs, name) {
		return "--" + name
	}
	return variable
}

// connect is the prologue of a command that logs and uses the database:
// the logger (LOG_LEVEL), then the connection (DATABASE_URL), so that a bad
// level is a usage error before any connection. The caller closes db.
func connect(ctx context.Context, e *env) (zerolog.Logger, *sqlx.DB, error) {
	log, err := newLogger(e)
	if err != nil {
		return log, nil, err
	}
	db, err := openDB(ctx, e)
	return log, db, err
}

// openDB connects to DATABASE_URL (ledger.Open: the URL checked, the
// pool, PgBouncer's binary_parameters). The URL never appears in an error.
func openDB(ctx context.Context, e *env) (*sqlx.DB, error) {
	db, err := ledger.Open(ctx, e.getenv("DATABASE_URL"))
	var ue *ledger.URLError
	if errors.As(err, &ue) {
		return nil, usagef("DATABASE_URL", "%s", ue.Msg)
	}
	return db, err
}

// registerSecrets records every secret in the environment so that no
// error or log line can print it. run calls it first, before any command
// can print; calling it again is harmless.
func registerSecrets(e *env) {
	e.secrets.Reset()
	for _, v := range []string{notice.SecretVar, notice.PreviousSecretsVar, "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"POSTMARK_SERVER_TOKEN", "MAILGUN_API_KEY", "SENDGRID_API_KEY", "TWILIO_AUTH_TOKEN",
		"MAILGUN_WEBHOOK_SIGNING_KEY", "POSTMARK_WEBHOOK_PASSWORD"} {
		e.secrets.Add(e.getenv(v))
	}
	for _, s := range strings.Split(e.getenv(notice.PreviousSecretsVar), ",") {
		e.secrets.Add(strings.TrimSpace(s))
	}
	for _, v := range []string{"DATABASE_URL", "SMTP_URL", "SCAN_HTTP_URL", "PUSHGATEWAY_URL"} {
		e.secrets.AddPasswords(e.getenv(v))
	}
}

// redact replaces every registered secret in s, and any password=...
// pair, with REDACTED.
func (e *env) redact(s string) string { return e.secrets.Redact(s) }

// newLogger builds the logger (observe.NewLogger) at LOG_LEVEL: every
// line leaves through the run's redactor.
func newLogger(e *env) (zerolog.Logger, error) {
	log, err := observe.NewLogger(e.secrets.Writer(e.stderr), cli.IsTerminal(e.stderr), e.getenv("LOG_LEVEL"), thisBuild().Version)
	if err != nil {
		return log, usagef("LOG_LEVEL", "%v", err)
	}
	return log, nil
}

// secret reads NOTICE_KEY_SECRET (notice.ParseSecret).
func secret(e *env) ([]byte, error) { return notice.ParseSecret(e.getenv(notice.SecretVar)) }

// previousSecrets reads NOTICE_KEY_SECRET_PREVIOUS, the earlier secrets
// of a rotation (notice.ParsePreviousSecrets).
func previousSecrets(e *env, current []byte) ([][]byte, error) {
	return notice.ParsePreviousSecrets(e.getenv(notice.PreviousSecretsVar), current)
}

// checkPushURL validates PUSHGATEWAY_URL (observe.CheckPushURL).
func checkPushURL(raw string) error {
	if err := observe.CheckPushURL(raw); err != nil {
		return usagef("PUSHGATEWAY_URL", "%v", err)
	}
	return nil
}

// outputFormat is the format a listing command prints in (its -o).
func outputFormat(e *env, o *cli.Output) (string, error) {
	f, err := o.Format(cli.IsTerminal(e.stdout))
	if err != nil {
		return "", usagef("-o", "%v", err)
	}
	return f, nil
}
