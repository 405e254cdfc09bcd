package main

import (
	"context"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/metrics"
	"scan/internal/scan"
)

// pushTimeout bounds the metrics push at the end of a pass. The push runs
// even when the pass was stopped by SIGTERM.
const pushTimeout = 10 * time.Second

// observer watches one pass for the people running it: Prometheus metrics
// pushed to PUSHGATEWAY_URL at the end, and a progress bar (terminal) or
// periodic progress lines (no terminal) while it runs. Its log lines carry
// run_id and shard, like the pass's own.
type observer struct {
	log     zerolog.Logger
	m       *metrics.Pass
	pushURL string
	prog    *progress
	clock   func() time.Time
	start   time.Time
	// progressTick overrides the ticker of the progress lines (tests).
	progressTick <-chan time.Time
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

// newObserver builds the observer of the pass runID. log should already
// carry the shard; PUSHGATEWAY_URL was checked by preparePass.
func newObserver(e *env, ps *preparedPass, runID string, log zerolog.Logger) *observer {
	domains := make([]string, 0, len(ps.pol.Rate.Domains))
	for d := range ps.pol.Rate.Domains {
		domains = append(domains, d)
	}
	slices.Sort(domains)
	return &observer{
		log:     log.With().Str("run_id", runID).Logger(),
		m:       metrics.New(metrics.Config{Results: scan.ResultNames(), Shard: ps.shard, Shards: ps.shards, Domains: domains}),
		pushURL: e.getenv("PUSHGATEWAY_URL"),
		clock:   e.clockNow,
	}
}

// hooks returns the scan hooks of the metrics and of the progress
// reporter, run after base's (the fail points of a crash-test build).
// The progress reporter is chosen by begin, after the Pass exists, so
// its hooks are resolved at call time.
func (o *observer) hooks(base scan.Hooks) scan.Hooks {
	own := scan.Hooks{
		AfterClaimCommit: func(n int) {
			if p := o.prog; p != nil {
				p.onClaim(n)
			}
		},
		AfterOutcomeCommit: func(n int) {
			if p := o.prog; p != nil {
				p.onRecorded(n)
			}
		},
		Outcome: func(state ledger.State, domain string, claimToCommit, claimToSend, waited time.Duration) {
			o.m.ObserveOutcome(string(state), domain, claimToCommit, claimToSend, waited)
			if p := o.prog; p != nil {
				p.onOutcome(state)
			}
		},
	}
	return chainHooks(base, own)
}

// run runs sc with o watching it (progress, metrics push): what `scan
// run` and each firing of `scan schedule` do with the pass newPass built.
func (o *observer) run(ctx context.Context, e *env, sc *scan.Pass) (scan.Summary, error) {
	o.begin(ctx, e, sc)
	sum, err := sc.Run(ctx)
	o.finish(ctx, sum, err)
	return sum, err
}

// begin starts the progress reporter just before sc runs: a bar when
// stderr is a terminal (its total from sc.CountDue, one count query per
// window group), else a log line every progressEvery.
func (o *observer) begin(ctx context.Context, e *env, sc *scan.Pass) {
	o.start = o.clock()
	if f, ok := e.stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		total, err := sc.CountDue(ctx)
		if err != nil {
			o.log.Debug().Err(err).Msg("could not count the notices due; the progress bar grows as batches are claimed")
		}
		o.prog = newProgressBar(e.stderr, total, o.clock)
		return
	}
	tick, stopTick := o.progressTick, func() {}
	if tick == nil {
		t := time.NewTicker(progressEvery)
		tick, stopTick = t.C, t.Stop
	}
	o.prog = newProgressLog(o.log, tick, o.clock)
	o.prog.stopTick = stopTick
}

// finish stops the progress reporter, sets the pass's totals and pushes
// the metrics when PUSHGATEWAY_URL is set. A failed push is logged; it
// never fails the pass.
func (o *observer) finish(ctx context.Context, sum scan.Summary, err error) {
	completed := err == nil
	if o.prog != nil {
		o.prog.stop(completed)
	}
	c := metrics.Counts{Notices: sum.Counts(), Backlog: sum.DeferredByDomain,
		Quarantine: sum.Quarantine, KeyMismatch: sum.KeyMismatch,
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
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushTimeout)
	defer cancel()
	if perr := o.m.Push(pctx, o.pushURL, completed); perr != nil {
		o.log.Warn().Err(perr).Msg("could not push the pass's metrics; the pass itself is unaffected")
		return
	}
	o.log.Debug().Bool("completed", completed).Msg("metrics pushed")
}

// chainHooks returns hooks that call each of hs's non-nil hooks in order.
func chainHooks(hs ...scan.Hooks) scan.Hooks {
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
