package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"scan/internal/cli"
	"scan/internal/clock"
	"scan/internal/failpoint"
	"scan/internal/ledger"
	"scan/internal/message"
	"scan/internal/notice"
	"scan/internal/observe"
	"scan/internal/policy"
	"scan/internal/provider/registry"
	"scan/internal/provider/twilio"
	"scan/internal/scan"
	"scan/internal/senders"
	"scan/internal/subscription"
)

var sqlOpenDB = sql.OpenDB

var migrateCommand = command{use: "migrate", short: "apply the embedded ledger migrations (idempotent)", env: envDB,
	flags: func(*pflag.FlagSet) runFunc { return cmdMigrate }}

func cmdMigrate(ctx context.Context, e *env, _ []string) error {
	log, db, err := connect(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := ledger.Migrate(ctx, db.DB)
	if err != nil {
		return err
	}
	log.Info().Int("applied", n).Msg("migrations applied")
	return nil
}

// runFlags are the flags of `scan run` (and of `scan schedule`, which runs
// the same pass).
type runFlags struct {
	config, sender, source, redirect, now, shard string
	maxDuration                                  string
	shards, batch                                int
	maxMint                                      cli.OptionalInt
	dryRun, shadow                               bool
}

func (f *runFlags) register(fs *pflag.FlagSet, withRunOnly bool) {
	fs.StringVar(&f.config, "config", "", "policy file (env SCAN_CONFIG); built-in defaults when empty")
	fs.StringVar(&f.sender, "sender", senders.Outbox, cli.OrList(senders.Names)+", or an ordered list to fail over along, e.g. ses,smtp (env SCAN_SENDER)")
	fs.StringVar(&f.source, "source", "subscriptions", "table or view to read, schema-qualified allowed")
	fs.StringVar(&f.redirect, "redirect-to", "", "deliver every notice to this address instead (env SCAN_REDIRECT_TO)")
	fs.StringVar(&f.shard, "shard", "", "I/N: take shard I of N (default from JOB_COMPLETION_INDEX and --shards)")
	fs.IntVar(&f.shards, "shards", 0, "number of shards when the index comes from JOB_COMPLETION_INDEX")
	fs.IntVar(&f.batch, "batch-size", 1000, "notices per claim statement at most")
	fs.StringVar(&f.maxDuration, "max-duration", "", "time budget of one pass, e.g. 50m (env SCAN_MAX_DURATION): then it stops claiming, finishes what is in flight and exits 0")
	if withRunOnly {
		fs.BoolVar(&f.dryRun, "dry-run", false, "write nothing; report what the pass would mint")
		fs.BoolVar(&f.shadow, "shadow", false, "enforce nothing: claim nothing, send nothing; record what the pass would claim apart from the ledger (scan shadow report)")
		fs.Var(&f.maxMint, "max-mint", "refuse (exit 3, nothing sent) when the pass would mint more than N new keys (default: no limit)")
		fs.StringVar(&f.now, "now", "", "evaluate windows at this RFC3339 instant instead of the clock (staging data)")
	}
}

// shardOf resolves --shard I/N, or JOB_COMPLETION_INDEX with --shards.
func (f *runFlags) shardOf(e *env) (int, int, error) {
	if f.shard != "" {
		i, n, ok := strings.Cut(f.shard, "/")
		si, err1 := strconv.Atoi(i)
		sn, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || sn < 1 || si < 0 || si >= sn {
			return 0, 0, usagef("--shard", "%q is not a shard I/N with 0 <= I < N (e.g. 0/4)", f.shard)
		}
		return si, sn, nil
	}
	if f.shards < 0 {
		return 0, 0, usagef("--shards", "must be at least 1")
	}
	if f.shards > 1 {
		v := e.getenv("JOB_COMPLETION_INDEX")
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i >= f.shards {
			return 0, 0, usagef("JOB_COMPLETION_INDEX", "%q is not a shard index below --shards=%d", v, f.shards)
		}
		return i, f.shards, nil
	}
	return 0, 1, nil
}

var runCommand = command{use: "run", short: "one pass: claim, send, record (--dry-run, --shadow, --max-mint N, --shard I/N)",
	long: "Prints one JSON summary on stdout. --dry-run writes nothing and reports what the pass would mint;\n" +
		"--shadow enforces nothing and records what it would claim apart from the ledger (scan shadow report).",
	env: append(append([]string{}, envPass...), "SCAN_CPUPROFILE"), flags: runFlagsOf}

// runFlagsOf declares scan run's flags.
func runFlagsOf(fs *pflag.FlagSet) runFunc {
	var f runFlags
	f.register(fs, true)
	return func(ctx context.Context, e *env, _ []string) error { return cmdRun(ctx, e, fs, &f) }
}

func cmdRun(ctx context.Context, e *env, fs *pflag.FlagSet, f *runFlags) error {
	if f.dryRun && f.shadow {
		return usagef("--shadow", "cannot be combined with --dry-run: a shadow pass records what it would claim, a dry run writes nothing")
	}
	ps, err := preparePass(e, fs, f)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(e)
	if err != nil {
		return err
	}
	defer stopProfile()
	now, err := e.now(f.now)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	if !f.dryRun {
		warnAsyncStandbys(ctx, ps.log, db)
	}
	sc, obs, closeSender, err := ps.newPass(ctx, e, db, f, now)
	if err != nil {
		return err
	}
	defer closeSender()
	if f.dryRun {
		d, err := sc.DryRun(ctx)
		if err != nil && d.WouldRefuse == "" {
			return err
		}
		if encErr := json.NewEncoder(e.stdout).Encode(d); encErr != nil {
			return encErr
		}
		return err // a pass would refuse: exit 4, as it would
	}
	if f.shadow {
		d, err := sc.Shadow(ctx)
		if err != nil {
			return err
		}
		return json.NewEncoder(e.stdout).Encode(d)
	}
	sum, err := obs.Run(ctx, sc)
	if encErr := json.NewEncoder(e.stdout).Encode(sum); encErr != nil && err == nil {
		err = encErr
	}
	return err
}

// newPass builds one pass at now, with its sender and its observer: the
// one place where `scan run` and `scan schedule` turn flags and
// environment into a scan.Config. The pass's hooks are the observer's,
// after the fail points of a crash-test build. closeSender must be called
// once the pass is over.
func (ps *preparedPass) newPass(ctx context.Context, e *env, db *sqlx.DB, f *runFlags, now time.Time) (sc *scan.Pass, obs *observe.Observer, closeSender func() error, err error) {
	sender, err := ps.senders.New()
	if err != nil {
		return nil, nil, nil, err
	}
	ps.smsClock.StartAt(now)
	runID := newRunID(now)
	passLog := ps.log.With().Int("shard", ps.shard).Logger()
	domains := make([]string, 0, len(ps.pol.Rate.Domains))
	for d := range ps.pol.Rate.Domains {
		domains = append(domains, d)
	}
	obs = observe.New(observe.Config{Log: passLog, RunID: runID, Domains: domains, Shard: ps.shard, Shards: ps.shards,
		PushURL: e.getenv("PUSHGATEWAY_URL"), Stderr: e.stderr, Clock: e.clockNow,
		DB: db, Describe: func(err error) string { return oneLine(e.redact(err.Error())) }})
	// --max-mint keeps its meaning: 0 refuses any mint, below 0 (the
	// default -1) is no limit, which is a nil Config.MaxMint.
	var maxMint *int
	if n, ok := f.maxMint.Value(); ok && n >= 0 {
		maxMint = &n
	}
	src, err := openSource(ctx, db, ps.pol, f.source, ps.shard, ps.shards)
	if err != nil {
		sender.Close()
		return nil, nil, nil, err
	}
	sc, err = scan.New(db, sender, ps.renderer, passLog, scan.Config{
		Policy: ps.pol, Secret: ps.secret, PreviousSecrets: ps.previous, Source: src, RunID: runID, Now: now,
		MaxMint: maxMint, Shard: ps.shard, Shards: ps.shards, BatchSize: f.batch, RedirectTo: ps.redirect,
		MaxDuration: ps.maxDuration, Hooks: obs.Hooks(failpoint.Hooks()), Schedule: ps.schedule,
		SMS: smsSender(ps.sms), SenderName: ps.senderNames[0],
	})
	if err != nil {
		sender.Close()
		return nil, nil, nil, err
	}
	return sc, obs, sender.Close, nil
}

// openSource is a pass's start-up I/O, before scan.New validates
// without any: the ledger must be migrated (ledger.Probe), and the source
// relation is probed once for its columns and the policy's anchors
// (subscription.Open). Each pass opens its own, so that a scheduler's
// next pass sees the relation as it is then.
func openSource(ctx context.Context, db *sqlx.DB, pol *policy.Policy, relation string, shard, shards int) (*subscription.Source, error) {
	if err := ledger.Probe(ctx, db); err != nil {
		if errors.Is(err, ledger.ErrNotMigrated) {
			return nil, &scan.ConfigError{Field: "database", Msg: err.Error()}
		}
		return nil, err
	}
	return subscription.Open(ctx, db, relation, subscription.Shard{I: shard, N: shards}, scan.Anchors(pol))
}

// preparedPass holds the parts of a pass built from flags and environment.
type preparedPass struct {
	pol           *policy.Policy
	secret        []byte
	previous      [][]byte // NOTICE_KEY_SECRET_PREVIOUS
	renderer      *message.Renderer
	shard, shards int
	redirect      string
	senderNames   []string     // SCAN_SENDER's, in order: one, or a failover list
	senders       *senders.Set // their settings
	maxDuration   time.Duration
	schedule      string // the cron passes run on, when not the policy's (scan schedule --cron)
	production    bool   // SCAN_ENVIRONMENT=production
	log           zerolog.Logger
	sms           *twilio.Client // with a kind of channel sms (issue 30)
	smsClock      *clock.Shifted // sms's, at each pass's now (newPass)
}

// preparePass is the prologue of `scan run` and `scan schedule`: it
// builds the logger and validates every flag and variable a pass uses, so
// that a mistake is a usage error before anything is written: the policy,
// the pass's own settings, then the sender and what production demands.
func preparePass(e *env, fs *pflag.FlagSet, f *runFlags) (*preparedPass, error) {
	log, err := newLogger(e)
	if err != nil {
		return nil, err
	}
	pol, err := loadPolicy(e, fs, f.config)
	if err != nil {
		return nil, err
	}
	p := &preparedPass{pol: pol, log: log}
	if l := debug.SetMemoryLimit(-1); l < math.MaxInt64 {
		log.Debug().Int64("go_memory_limit_mib", l>>20).Msg("the Go runtime's soft memory limit (GOMEMLIMIT, else the container's limit less the binary's pages)")
	}
	if err := p.passSettings(e, fs, f); err != nil {
		return nil, err
	}
	if err := p.prepareSender(e, fs, f); err != nil {
		return nil, err
	}
	for _, name := range p.senderNames { // every sender of a list may take a notice
		if err := pol.CheckConfirmSender(name); err != nil {
			return nil, err
		}
	}
	if p.production {
		if err := pol.CheckProduction(); err != nil {
			return nil, err
		}
	}
	if p.renderer, err = newRenderer(pol); err != nil {
		return nil, err
	}
	p.smsClock = clock.NewShifted(e.clock)
	if !pol.UsesSMS() {
		return p, nil
	}
	if p.sms, err = senders.SMS(p.senderConfig(e), p.smsClock); err != nil {
		return nil, err
	}
	return p, nil
}

// passSettings reads what one pass needs besides its sender: the secret,
// the shard, the batch size, the time budget, the source and the
// Pushgateway.
func (p *preparedPass) passSettings(e *env, fs *pflag.FlagSet, f *runFlags) error {
	var err error
	if p.secret, err = secret(e); err != nil {
		return err
	}
	if p.previous, err = previousSecrets(e, p.secret); err != nil {
		return err
	}
	if p.shard, p.shards, err = f.shardOf(e); err != nil {
		return err
	}
	if f.batch < 1 || f.batch > 10000 {
		return usagef("--batch-size", "must be between 1 and 10000, got %d", f.batch)
	}
	if raw := flagOrEnv(fs, "max-duration", f.maxDuration, e, "SCAN_MAX_DURATION"); raw != "" {
		d, err := policy.ParseDuration(raw)
		if err != nil || d <= 0 {
			return usagef(fieldOf(fs, "max-duration", "SCAN_MAX_DURATION"), "%q is not a positive duration such as 50m or 1h30m", raw)
		}
		p.maxDuration = d
	}
	if _, err := subscription.QuoteRelation(f.source); err != nil {
		return usagef("--source", "%v", err)
	}
	return checkPushURL(e.getenv("PUSHGATEWAY_URL"))
}

// prepareSender reads the sender (--sender or SCAN_SENDER), one name or
// an ordered list of them for failover (senders.List), and what each
// needs (senders.Prepare).
func (p *preparedPass) prepareSender(e *env, fs *pflag.FlagSet, f *runFlags) error {
	p.redirect = flagOrEnv(fs, "redirect-to", f.redirect, e, "SCAN_REDIRECT_TO")
	raw := flagOrEnv(fs, "sender", f.sender, e, "SCAN_SENDER")
	p.production = e.getenv("SCAN_ENVIRONMENT") == "production"
	names, err := senders.List(raw, p.pol.Provider)
	if err != nil {
		return usagef(fieldOf(fs, "sender", "SCAN_SENDER"), "%v", err)
	}
	p.senderNames = names
	p.senders, err = senders.Prepare(p.senderConfig(e))
	return err
}

// senderConfig is what the senders' settings are read with.
func (p *preparedPass) senderConfig(e *env) senders.Config {
	return senders.Config{Names: p.senderNames, Getenv: e.getenv, Production: p.production, Redirect: p.redirect,
		Pool: p.pol.Concurrency, ConfigurationSet: p.pol.SES.ConfigurationSet}
}

// newRenderer builds the message renderer from the policy: one place, so
// that `scan preview` renders exactly what `scan run` sends.
func newRenderer(pol *policy.Policy) (*message.Renderer, error) {
	correlation, err := registry.Correlation(pol.Provider, pol.SES.ConfigurationSet)
	if err != nil {
		return nil, usagef("provider", "%v", err)
	}
	// The default locale and time zone render a row without a usable
	// locale or time_zone; the policy checked both, the zone is loaded
	// from the embedded IANA database.
	rc := message.RenderConfig{From: pol.From, MessageIDDomain: pol.MessageIDDomain, CancelURL: pol.CancelURL,
		Correlation: correlation, DefaultLocale: pol.DefaultLocale, PreferencesURL: pol.PreferencesURL}
	if rc.DefaultTimeZone, err = policy.LoadZone(pol.DefaultTimeZone); err != nil {
		return nil, usagef("default_time_zone", "%v", err)
	}
	if pol.TemplatesDir != "" {
		rc.Templates = os.DirFS(pol.TemplatesDir)
	}
	r, err := message.NewRenderer(rc)
	if err != nil {
		return nil, usagef("config", "%v", err)
	}
	if err := checkSMSTemplates(r, pol); err != nil {
		return nil, err
	}
	return r, nil
}

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
	sub, period, kind, rev := &a.sub, &a.period, &a.kind, &a.rev
	if !notice.ValidChannel(a.channel) {
		return usagef("--channel", "%q is not email or sms", a.channel)
	}
	sec, err := secret(e)
	if err != nil {
		return err
	}
	if *sub == "" {
		return usagef("--subscription", "required")
	}
	ps, err := time.Parse(notice.DateLayout, *period)
	if err != nil {
		return usagef("--period-start", "%q is not a date YYYY-MM-DD", *period)
	}
	if err := notice.ValidateKind(*kind); err != nil {
		return usagef("--kind", "%v", err)
	}
	if *rev < 0 {
		return usagef("--revision", "must be 0 or more")
	}
	k, err := notice.NewKeyer(sec)
	if err != nil {
		return usagef("NOTICE_KEY_SECRET", "%v", err)
	}
	_, err = fmt.Fprintln(e.stdout, k.ChannelKey(notice.Tuple{SubscriptionID: *sub, PeriodStart: ps, Kind: *kind, Revision: *rev}, a.channel))
	return err
}
