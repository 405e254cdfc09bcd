// Package observe watches a pass for the people running it: Prometheus
// metrics pushed to a Pushgateway at its end, and its progress while it
// runs (internal/progress).
package observe

import (
	"context"
	"io"
	"os"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/metrics"
	"scan/internal/progress"
	"scan/internal/scan"
)

// PushTimeout bounds the metrics push at the end of a pass. The push runs
// even when the pass was stopped by SIGTERM.
const PushTimeout = 10 * time.Second

// Observer watches one pass for the people running it: Prometheus metrics
// pushed to PUSHGATEWAY_URL at the end, and a progress bar (terminal) or
// periodic progress lines (no terminal) while it runs. Its log lines carry
// run_id and shard, like the pass's own.
type Observer struct {
	log      zerolog.Logger
	m        *metrics.Pass
	pushURL  string
	prog     *progress.Reporter
	clock    func() time.Time
	start    time.Time
	stderr   io.Writer
	terminal bool   // stderr is a terminal: a bar, not log lines
	record   Config // RunID, Shard, Shards, DB, Describe: for notice_pass
}

// Config is what an Observer needs of the pass and its process.
type Config struct {
	Log           zerolog.Logger // carries the shard; the observer adds run_id
	RunID         string
	Domains       []string // the policy's rate domains (metric labels)
	Shard, Shards int
	PushURL       string // the Pushgateway's URL, already checked; "" for none
	Stderr        io.Writer
	Clock         func() time.Time
	// DB, when set, is where the pass's start and end are recorded
	// (notice_pass, sql/0025), which `scan status` reads; Describe gives
	// the one line a failure is recorded as, secrets redacted. A record
	// that cannot be written is logged and never fails the pass: it is
	// the operator's view, not the ledger.
	DB       sqlx.ExecerContext
	Describe func(error) string
}

// New builds the observer of one pass.
func New(c Config) *Observer {
	domains := slices.Clone(c.Domains)
	slices.Sort(domains)
	terminal := false
	if f, ok := c.Stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		terminal = true
	}
	return &Observer{
		log:      c.Log.With().Str("run_id", c.RunID).Logger(),
		m:        metrics.New(metrics.Config{Results: scan.ResultNames(), Shard: c.Shard, Shards: c.Shards, Domains: domains}),
		pushURL:  c.PushURL,
		clock:    c.Clock,
		stderr:   c.Stderr,
		terminal: terminal,
		record:   c,
	}
}

// Hooks returns the scan hooks of the metrics and of the progress
// reporter, run after base's (the fail points of a crash-test build).
// The progress reporter is chosen by begin, after the Pass exists, so
// its hooks are resolved at call time.
func (o *Observer) Hooks(base scan.Hooks) scan.Hooks {
	own := scan.Hooks{
		AfterClaimCommit: func(n int) {
			if p := o.prog; p != nil {
				p.OnClaim(n)
			}
		},
		AfterOutcomeCommit: func(n int) {
			if p := o.prog; p != nil {
				p.OnRecorded(n)
			}
		},
		Outcome: func(state ledger.State, domain string, claimToCommit, claimToSend, waited time.Duration) {
			o.m.ObserveOutcome(string(state), domain, claimToCommit, claimToSend, waited)
			if p := o.prog; p != nil {
				p.OnOutcome(state)
			}
		},
	}
	return ChainHooks(base, own)
}

// Run runs sc with o watching it (progress, metrics push): what `scan
// run` and each firing of `scan schedule` do with the pass they built.
func (o *Observer) Run(ctx context.Context, sc *scan.Pass) (scan.Summary, error) {
	o.begin(ctx, sc)
	o.recordStart(ctx)
	sum, err := sc.Run(ctx)
	o.recordEnd(ctx, sum, err)
	o.finish(ctx, sum, err)
	return sum, err
}

// begin starts the progress reporter just before sc runs: a bar when
// stderr is a terminal (its total from sc.CountDue, one count query per
// window group), else a log line every progress.Every.
func (o *Observer) begin(ctx context.Context, sc *scan.Pass) {
	o.start = o.clock()
	if o.terminal {
		total, err := sc.CountDue(ctx)
		if err != nil {
			o.log.Debug().Err(err).Msg("could not count the notices due; the progress bar grows as batches are claimed")
		}
		o.prog = progress.NewBar(o.stderr, total, o.clock)
		return
	}
	t := time.NewTicker(progress.Every)
	o.prog = progress.NewLog(o.log, t.C, t.Stop, o.clock)
}

// recordStart records the pass's start in notice_pass, when Config.DB
// is set.
func (o *Observer) recordStart(ctx context.Context) {
	r := o.record
	if r.DB == nil {
		return
	}
	if err := ledger.PassStarted(ctx, r.DB, r.RunID, r.Shard, r.Shards, o.clock()); err != nil {
		o.log.Warn().Err(err).Msg("could not record the pass's start for scan status; the pass goes on")
	}
}

// recordEnd records the pass's end even when ctx was cancelled
// (SIGTERM), as the metrics push does.
func (o *Observer) recordEnd(ctx context.Context, sum scan.Summary, runErr error) {
	r := o.record
	if r.DB == nil {
		return
	}
	failure := ""
	if runErr != nil {
		failure = r.Describe(runErr)
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PushTimeout)
	defer cancel()
	if err := ledger.PassEnded(ectx, r.DB, r.RunID, failure, sum.Counts(), o.clock()); err != nil {
		o.log.Warn().Err(err).Msg("could not record the pass's end for scan status")
	}
}

// finish stops the progress reporter, sets the pass's totals and pushes
// the metrics when PUSHGATEWAY_URL is set. A failed push is logged; it
// never fails the pass.
func (o *Observer) finish(ctx context.Context, sum scan.Summary, err error) {
	completed := err == nil
	if o.prog != nil {
		o.prog.Stop(completed)
	}
	c := metrics.Counts{Notices: sum.Counts(), Backlog: sum.DeferredByDomain,
		Quarantine: sum.Quarantine, KeyMismatch: sum.KeyMismatch, InvalidAddress: sum.InvalidAddressWaiting,
		WindowLength: sum.WindowLength, Attempts: sum.Attempts, Keys: sum.Minted + sum.Retried}
	if sum.QuarantineSince != nil {
		c.QuarantineOldest = *sum.QuarantineSince
	}
	if sum.RetryOldest != nil {
		c.RetryOldest = *sum.RetryOldest
	}
	for _, o := range sum.Objective {
		c.Objective = append(c.Objective, metrics.ObjectiveCount(o))
	}
	c.EmailConfirms = sum.EmailConfirms
	end := o.clock()
	o.m.Finish(c, end.Sub(o.start), completed, end)
	if o.pushURL == "" {
		return
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PushTimeout)
	defer cancel()
	if perr := o.m.Push(pctx, o.pushURL, completed); perr != nil {
		o.log.Warn().Err(perr).Msg("could not push the pass's metrics; the pass itself is unaffected")
		return
	}
	o.log.Debug().Bool("completed", completed).Msg("metrics pushed")
}

// ChainHooks returns hooks that call each of hs's non-nil hooks in order.
func ChainHooks(hs ...scan.Hooks) scan.Hooks {
	var out scan.Hooks
	for _, h := range hs {
		out.BeforeClaim = chain1(out.BeforeClaim, h.BeforeClaim)
		out.AfterClaimCommit = chain1(out.AfterClaimCommit, h.AfterClaimCommit)
		out.AfterAccepted = chain1(out.AfterAccepted, h.AfterAccepted)
		out.AfterOutcomeCommit = chain1(out.AfterOutcomeCommit, h.AfterOutcomeCommit)
		if a, b := out.Outcome, h.Outcome; a == nil {
			out.Outcome = b
		} else if b != nil {
			out.Outcome = func(s ledger.State, d string, c, cs, w time.Duration) { a(s, d, c, cs, w); b(s, d, c, cs, w) }
		}
	}
	return out
}

func chain1[T any](a, b func(T)) func(T) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(v T) { a(v); b(v) }
}
