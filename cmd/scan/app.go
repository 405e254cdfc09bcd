package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
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

	"scan/internal/clock"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/policy"
	"scan/internal/redact"
	"scan/internal/scan"
	"scan/internal/subscription"
)

// Exit codes, as the README states them under Commands (the README is
// the operator contract: commands, summary line, exit codes).
const (
	exitOK       = 0
	exitAborted  = 1
	exitUsage    = 2
	exitRefused  = 3
	exitRestored = 4
	usageSummary = `usage: scan COMMAND [flags]

commands:
  migrate      apply the embedded ledger migrations
  run          one pass: claim, send, record (--dry-run, --max-mint N, --shard I/N, --now RFC3339)
  lookup ID    every ledger row of one subscription
  quarantine   claims with no recorded outcome, oldest first
  reconcile    settle quarantined claims from provider events (--events FILE [--format ses|sendgrid|mailgun|postmark]),
               from an SQS queue of SES events (--sqs QUEUE_URL), or from the provider's API (--ask postmark|mailgun|sendgrid)
  resolve KEY  an operator's decision on one claim (--sent|--not-sent|--retry --reason TEXT)
  backfill     import notices an earlier system already sent (--from FILE.csv)
  schedule     run passes in-process on a cron schedule
  key          print a notice key
  version      version, commit and build time (also --version)
  recover      after a restore or failover (exit 4): record the provider's record since T
               (--since T --events FILE|- [--format F] | --ask PROVIDER), or --none-lost --reason TEXT --by NAME
  prune        remove billing periods older than the retention (--older-than D, --dry-run)
  receive      serve the providers' event webhooks: verify, apply, commit, then answer 2xx (--listen ADDR)
  preview      print the message a subscription would get now (--subscription ID [--kind K] [--now T]),
               or write sample notices for review (--kind K --locale L [--jurisdiction J] --out DIR);
               writes nothing to the ledger, sends nothing
  suppress     the suppression list: add|remove (--email ADDR|--phone NUMBER --reason TEXT), list,
               import (--from FILE.csv --channel email|sms); keeps and prints no address
  proof        the exact message each notice of a subscription handed over, verified, with a JSON record
               and a PDF for a dispute (--subscription ID --out DIR); --verify [--sample N] checks kept messages
  undelivered  notices that reached the customer by no channel, with the reason (--since D, --format json|csv)

Run 'scan COMMAND -h' for a command's flags.`
)

// usageError is a bad flag, argument, environment variable or config:
// exit 2, nothing written. Field names what to fix.
type usageError struct {
	field string
	msg   string
}

func (e *usageError) Error() string { return e.field + ": " + e.msg }

func usagef(field, format string, a ...any) error {
	return &usageError{field: field, msg: fmt.Sprintf(format, a...)}
}

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
func loadPolicy(e *env, fs *flag.FlagSet, val string) (*policy.Policy, error) {
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
	if len(args) == 0 {
		fmt.Fprintln(stderr, usageSummary)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usageSummary)
		return exitOK
	case "--version", "-version":
		cmd = "version"
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		if c.name == cmd {
			return exitCode(e, c.run(ctx, e, rest))
		}
		names[i] = c.name
	}
	fmt.Fprintf(stderr, "scan: unknown command %q: use one of %s ('scan help' lists them)\n", e.redact(cmd), strings.Join(names, ", "))
	return exitUsage
}

// commands are scan's commands by name (usageSummary describes them), in
// the order an unknown command's message lists them.
var commands = []struct {
	name string
	run  func(ctx context.Context, e *env, args []string) error
}{
	{"migrate", cmdMigrate}, {"run", cmdRun}, {"lookup", cmdLookup}, {"quarantine", cmdQuarantine},
	{"reconcile", cmdReconcile}, {"resolve", cmdResolve}, {"backfill", cmdBackfill},
	{"schedule", cmdSchedule}, {"key", cmdKey}, {"prune", cmdPrune}, {"preview", cmdPreview},
	{"version", cmdVersion}, {"shadow", cmdShadow}, {"suppress", cmdSuppress}, {"undelivered", cmdUndelivered},
	{"receive", cmdReceive}, {"recover", cmdRecover}, {"proof", cmdProof},
}

func exitCode(e *env, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	var ce *scan.ConfigError
	var se *subscription.ConfigError
	var pe *policy.Error
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue), errors.As(err, &ce), errors.As(err, &se), errors.As(err, &pe):
		fmt.Fprintf(e.stderr, "scan: %s\n", oneLine(e.redact(err.Error())))
		return exitUsage
	case errors.Is(err, scan.ErrMaxMint):
		fmt.Fprintf(e.stderr, "scan: %s\n", oneLine(e.redact(err.Error())))
		return exitRefused
	case errors.Is(err, ledger.ErrRestored):
		fmt.Fprintf(e.stderr, "scan: %s\n", oneLine(e.redact(err.Error())))
		return exitRestored
	default:
		fmt.Fprintf(e.stderr, "scan: %s\n", oneLine(e.redact(err.Error())))
		return exitAborted
	}
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

// newFlags returns a flag set whose errors come back as usage errors.
// The usage text goes to stderr for -h only (see parse).
func newFlags(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("scan "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: scan %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags that may come before or after positional arguments
// and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	out := fs.Output()
	for {
		// The flag package prints the error and the whole usage on a bad
		// flag; the operator gets one line instead, and the usage on -h.
		fs.SetOutput(io.Discard)
		err := fs.Parse(args)
		fs.SetOutput(out)
		if err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage()
				return nil, err
			}
			return nil, usagef("flags", "%v (see 'scan %s -h')", err, strings.TrimPrefix(fs.Name(), "scan "))
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseNoArgs parses the flags of a command that takes no positional
// argument; one is a usage error, with hint (e.g. "; use --from FILE.csv")
// after it.
func parseNoArgs(fs *flag.FlagSet, args []string, hint string) error {
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("arguments", "%s takes no arguments, got %q%s", strings.TrimPrefix(fs.Name(), "scan "), pos[0], hint)
	}
	return nil
}

// flagOrEnv returns the flag's value when it was set, else the variable's.
func flagOrEnv(fs *flag.FlagSet, name, val string, e *env, variable string) string {
	if isSet(fs, name) {
		return val
	}
	if v := e.getenv(variable); v != "" {
		return v
	}
	return val
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// fieldOf names what a usage error about a flag-or-variable setting
// points at: --name when the flag was given, else the variable.
func fieldOf(fs *flag.FlagSet, name, variable string) string {
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
	conn, err := pq.NewConnector(dsn)
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

func newRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
