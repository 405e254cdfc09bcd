package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"scan/internal/cli"
	"scan/internal/clock"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/redact"
	"scan/internal/scan"
	"scan/internal/senders"
	"scan/internal/subscription"
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

func exitCode(e *env, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *cli.UsageError
	var sde *senders.ConfigError
	var ce *scan.ConfigError
	var se *subscription.ConfigError
	var pe *policy.Error
	code, msg := exitAborted, oneLine(e.redact(err.Error()))
	switch {
	case errors.As(err, &ue), errors.As(err, &sde),
		errors.As(err, &ce), errors.As(err, &se), errors.As(err, &pe):
		code = exitUsage
	case errors.Is(err, scan.ErrMaxMint):
		code = exitRefused
	case errors.Is(err, ledger.ErrRestored):
		code = exitRestored
	case isSplitStatement(err):
		msg += ": a connection pooler in transaction mode (PgBouncer) ran a statement's parts on two server connections; " +
			"set binary_parameters=yes in DATABASE_URL (scan does unless the URL sets it)"
	}
	fmt.Fprintf(e.stderr, "scan: %s\n", msg)
	return code
}

// isSplitStatement says whether err is what lib/pq gets behind PgBouncer
// in transaction pooling without binary_parameters: the Bind of an
// unnamed statement reached a server connection that had not parsed it.
func isSplitStatement(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "26000" // invalid_sql_statement_name
}

// oneLine folds a multi-line error (a YAML decoder's list, a driver's
// detail) into the one line an operator greps for.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "; ")
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

// openDB validates DATABASE_URL and connects. The URL never appears in an
// error (it may hold a password).
func openDB(ctx context.Context, e *env) (*sqlx.DB, error) {
	dsn := e.getenv("DATABASE_URL")
	if dsn == "" {
		return nil, usagef("DATABASE_URL", "required: a PostgreSQL URL (postgres://user@host/db) or keyword string (host=... dbname=...)")
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if _, err := url.Parse(dsn); err != nil {
			return nil, usagef("DATABASE_URL", "cannot parse the URL (expected postgres://user:password@host:port/db?sslmode=...)")
		}
	} else if strings.Contains(dsn, "://") || !strings.Contains(dsn, "=") {
		return nil, usagef("DATABASE_URL", "not a PostgreSQL URL (postgres://...) or keyword string (host=... dbname=...)")
	}
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, usagef("DATABASE_URL", "cannot parse it: %s", e.redact(err.Error()))
	}
	// Behind PgBouncer in transaction pooling (docs/fleet.md): lib/pq
	// sends a statement with parameters as Parse and Describe, waits for
	// the reply, then sends Bind and Execute. Outside a transaction
	// PgBouncer may hand the second half to another server connection,
	// which never saw the statement: "unnamed prepared statement does not
	// exist". binary_parameters=yes sends all four in one message, so the
	// statement runs on one server connection. Unless the URL says
	// otherwise.
	if !strings.Contains(dsn, "binary_parameters") {
		cfg.BinaryParameters = true
	}
	conn, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, usagef("DATABASE_URL", "cannot parse it: %s", e.redact(err.Error()))
	}
	db := sqlx.NewDb(sqlOpenDB(conn), "postgres")
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to the database (%s): %s", redact.DSN(dsn), e.redact(err.Error()))
	}
	return db, nil
}

// registerSecrets records every secret in the environment so that no
// error or log line can print it. run calls it first, before any command
// can print; calling it again is harmless.
func registerSecrets(e *env) {
	e.secrets.Reset()
	e.secrets.Add(e.getenv("NOTICE_KEY_SECRET"))
	e.secrets.Add(e.getenv("NOTICE_KEY_SECRET_PREVIOUS"))
	for _, s := range strings.Split(e.getenv("NOTICE_KEY_SECRET_PREVIOUS"), ",") {
		e.secrets.Add(strings.TrimSpace(s))
	}
	e.secrets.Add(e.getenv("AWS_SECRET_ACCESS_KEY"))
	e.secrets.Add(e.getenv("AWS_SESSION_TOKEN"))
	for _, v := range []string{"POSTMARK_SERVER_TOKEN", "MAILGUN_API_KEY", "SENDGRID_API_KEY", "TWILIO_AUTH_TOKEN",
		"MAILGUN_WEBHOOK_SIGNING_KEY", "POSTMARK_WEBHOOK_PASSWORD"} {
		e.secrets.Add(e.getenv(v))
	}
	for _, v := range []string{"DATABASE_URL", "SMTP_URL", "SCAN_HTTP_URL", "PUSHGATEWAY_URL"} {
		e.secrets.AddPasswords(e.getenv(v))
	}
}

// redact replaces every registered secret in s, and any password=...
// pair, with REDACTED.
func (e *env) redact(s string) string { return e.secrets.Redact(s) }

// newLogger builds the zerolog logger: JSON on stderr, human-readable on a
// terminal, level from LOG_LEVEL.
func newLogger(e *env) (zerolog.Logger, error) {
	lvl := zerolog.InfoLevel
	if v := e.getenv("LOG_LEVEL"); v != "" {
		l, err := zerolog.ParseLevel(strings.ToLower(v))
		if err != nil || v == "" || l > zerolog.ErrorLevel || l < zerolog.DebugLevel {
			return zerolog.Nop(), usagef("LOG_LEVEL", "%q is not one of debug, info, warn, error", v)
		}
		lvl = l
	}
	// Every log line leaves through the run's redactor.
	var w io.Writer = e.secrets.Writer(e.stderr)
	if f, ok := e.stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	// A pass logs from several goroutines (producer, recorder, progress):
	// one line per Write, never two interleaved, whatever stderr is.
	// Every line, the first included, says which build wrote it.
	return zerolog.New(zerolog.SyncWriter(w)).Level(lvl).With().Timestamp().Str("version", thisBuild().Version).Logger(), nil
}

// secret reads NOTICE_KEY_SECRET.
func secret(e *env) ([]byte, error) {
	s := e.getenv("NOTICE_KEY_SECRET")
	if s == "" {
		return nil, usagef("NOTICE_KEY_SECRET", "required: set it to a random value of at least %d bytes (e.g. openssl rand -hex 32)", notice.MinSecretLen)
	}
	if len(s) < notice.MinSecretLen {
		return nil, usagef("NOTICE_KEY_SECRET", "too short (%d bytes): it must be at least %d bytes", len(s), notice.MinSecretLen)
	}
	return []byte(s), nil
}

// previousSecrets reads NOTICE_KEY_SECRET_PREVIOUS: the earlier secrets
// of a rotation, comma-separated, each at least notice.MinSecretLen bytes
// (none when unset). The suppression list matches an address under each
// of them too (docs/fleet.md, Secret rotation). An error names the
// variable and the secret's position, never the secret.
func previousSecrets(e *env, current []byte) ([][]byte, error) {
	v := e.getenv("NOTICE_KEY_SECRET_PREVIOUS")
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out [][]byte
	for i, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			return nil, usagef("NOTICE_KEY_SECRET_PREVIOUS", "secret %d is empty: give the earlier secrets separated by commas", i+1)
		case len(s) < notice.MinSecretLen:
			return nil, usagef("NOTICE_KEY_SECRET_PREVIOUS", "secret %d is too short (%d bytes): each must be at least %d bytes", i+1, len(s), notice.MinSecretLen)
		case s == string(current):
			return nil, usagef("NOTICE_KEY_SECRET_PREVIOUS", "secret %d is NOTICE_KEY_SECRET itself: list only earlier secrets", i+1)
		}
		out = append(out, []byte(s))
	}
	return out, nil
}

// checkPushURL validates PUSHGATEWAY_URL (empty: no push) so that a typo
// is a usage error before anything is written, not a warning every night.
func checkPushURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("PUSHGATEWAY_URL", "not an http(s) URL such as http://pushgateway.monitoring:9091")
	}
	return nil
}

// outputFormat is the format a listing command prints in (its -o).
func outputFormat(e *env, o *cli.Output) (string, error) {
	f, err := o.Format(isTerminal(e.stdout))
	if err != nil {
		return "", usagef("-o", "%v", err)
	}
	return f, nil
}
