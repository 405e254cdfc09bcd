package main

import (
	"context"
	"encoding/json"
	"math"
	"runtime/debug"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"scan/internal/cli"
	"scan/internal/job"
	"scan/internal/ledger"
	"scan/internal/policy"
	"scan/internal/senders"
	"scan/internal/subscription"
)

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
	config, sender, source, redirect, now, maxDuration string
	shards, batch                                      int
	shard                                              cli.ShardFlag
	maxMint                                            cli.OptionalInt
	dryRun, shadow                                     bool
}

func (f *runFlags) register(fs *pflag.FlagSet, withRunOnly bool) {
	fs.StringVar(&f.config, "config", "", "policy file (env SCAN_CONFIG); built-in defaults when empty")
	fs.StringVar(&f.sender, "sender", senders.Outbox, cli.OrList(senders.Names)+", or an ordered list to fail over along, e.g. ses,smtp (env SCAN_SENDER)")
	fs.StringVar(&f.source, "source", "subscriptions", "table or view to read, schema-qualified allowed")
	fs.StringVar(&f.redirect, "redirect-to", "", "deliver every notice to this address instead (env SCAN_REDIRECT_TO)")
	fs.Var(&f.shard, "shard", "take shard I of N (default from JOB_COMPLETION_INDEX and --shards)")
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
		job.WarnAsyncStandbys(ctx, ps.log, db)
	}
	sc, obs, closeSender, err := ps.job.Pass(ctx, db, now) // closeSender once the pass is over
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

// newRunID is a pass's run id, which recover and backfill share.
var newRunID = job.NewRunID

// preparedPass holds the parts of a pass built from flags and
// environment: job, and what scan schedule reads (the policy, the
// logger).
type preparedPass struct {
	job        job.Config
	pol        *policy.Policy
	production bool // SCAN_ENVIRONMENT=production
	log        zerolog.Logger
}

// preparePass is the prologue of `scan run` and `scan schedule`: it
// builds the logger and validates every flag and variable a pass uses, so
// that a mistake is a usage error before anything is written: the policy,
// the pass's own settings, the sender, then the settings together
// (job.Config.Complete: what production demands, the sms sender).
func preparePass(e *env, fs *pflag.FlagSet, f *runFlags) (*preparedPass, error) {
	log, err := newLogger(e)
	if err != nil {
		return nil, err
	}
	pol, err := loadPolicy(e, fs, f.config)
	if err != nil {
		return nil, err
	}
	p := &preparedPass{pol: pol, log: log, job: job.Config{Policy: pol, Log: log, PushURL: e.getenv("PUSHGATEWAY_URL"),
		Stderr: e.stderr, Clock: e.clockNow, Describe: func(err error) string { return cli.OneLine(e.redact(err.Error())) }}}
	if l := debug.SetMemoryLimit(-1); l < math.MaxInt64 {
		log.Debug().Int64("go_memory_limit_mib", l>>20).Msg("the Go runtime's soft memory limit (GOMEMLIMIT, else the container's limit less the binary's pages)")
	}
	if err := p.passSettings(e, fs, f); err != nil {
		return nil, err
	}
	if err := p.prepareSender(e, fs, f); err != nil {
		return nil, err
	}
	if err := p.job.Complete(p.senderConfig(nil, e), e.clock); err != nil {
		return nil, err
	}
	return p, nil
}

// passSettings reads what one pass needs besides its sender: the secret,
// the shard, the batch size, the time budget, the source and the
// Pushgateway.
func (p *preparedPass) passSettings(e *env, fs *pflag.FlagSet, f *runFlags) error {
	j := &p.job
	var err error
	if j.Secret, err = secret(e); err != nil {
		return err
	}
	if j.PreviousSecrets, err = previousSecrets(e, j.Secret); err != nil {
		return err
	}
	if j.Shard, j.Shards, err = f.shard.Resolve(f.shards, e.getenv("JOB_COMPLETION_INDEX")); err != nil {
		return err
	}
	j.BatchSize, j.Relation = f.batch, f.source
	if f.batch < 1 || f.batch > 10000 {
		return usagef("--batch-size", "must be between 1 and 10000, got %d", f.batch)
	}
	// --max-mint keeps its meaning: 0 refuses any mint, below 0 (the
	// default -1) is no limit, which is a nil MaxMint.
	if n, ok := f.maxMint.Value(); ok && n >= 0 {
		j.MaxMint = &n
	}
	if raw := flagOrEnv(fs, "max-duration", f.maxDuration, e, "SCAN_MAX_DURATION"); raw != "" {
		d, err := policy.ParseDuration(raw)
		if err != nil || d <= 0 {
			return usagef(fieldOf(fs, "max-duration", "SCAN_MAX_DURATION"), "%q is not a positive duration such as 50m or 1h30m", raw)
		}
		j.MaxDuration = d
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
	p.job.Redirect = flagOrEnv(fs, "redirect-to", f.redirect, e, "SCAN_REDIRECT_TO")
	raw := flagOrEnv(fs, "sender", f.sender, e, "SCAN_SENDER")
	p.production = e.getenv("SCAN_ENVIRONMENT") == "production"
	names, err := senders.List(raw, p.pol.Provider)
	if err != nil {
		return usagef(fieldOf(fs, "sender", "SCAN_SENDER"), "%v", err)
	}
	p.job.Senders, err = senders.Prepare(p.senderConfig(names, e))
	return err
}

// senderConfig is what the senders' settings are read with.
func (p *preparedPass) senderConfig(names []string, e *env) senders.Config {
	return senders.Config{Names: names, Getenv: e.getenv, Production: p.production, Redirect: p.job.Redirect,
		Pool: p.pol.Concurrency, ConfigurationSet: p.pol.SES.ConfigurationSet}
}
