package main

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/schollz/progressbar/v3"

	"scan/internal/ledger"
)

// progressEvery is how often a pass without a terminal logs its progress.
const progressEvery = 5 * time.Second

// progress reports a running pass. On a terminal it draws a bar of the
// outcomes recorded against the notices due (a cheap count taken before
// the pass; raised if the pass claims more), with rate and ETA. Without a
// terminal it logs one "pass progress" line at every tick instead
// (claimed, recorded, sent, rate, elapsed), so a long pass in a log
// collector is visibly alive.
//
// Its hooks run on the pass's goroutines; every method is safe for
// concurrent use.
type progress struct {
	clock func() time.Time
	start time.Time
	log   zerolog.Logger
	bar   *progressbar.ProgressBar // nil without a terminal

	claimed, recorded, sent atomic.Int64

	tick     <-chan time.Time // log mode only
	stopTick func()           // stops tick's ticker; nil for a test's channel
	quit     chan struct{}
	done     sync.WaitGroup
	once     sync.Once
}

// newProgressBar returns a progress reporter drawing a bar of total
// notices on w.
func newProgressBar(w io.Writer, total int, clock func() time.Time) *progress {
	p := &progress{clock: clock, start: clock(), quit: make(chan struct{})}
	p.bar = progressbar.NewOptions64(int64(max(total, 1)),
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("notices"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("notices"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionFullWidth(),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { _, _ = io.WriteString(w, "\n") }),
	)
	return p
}

// newProgressLog returns a progress reporter that logs a line on log at
// every tick until stop.
func newProgressLog(log zerolog.Logger, tick <-chan time.Time, clock func() time.Time) *progress {
	p := &progress{clock: clock, start: clock(), log: log, tick: tick, quit: make(chan struct{})}
	p.done.Add(1)
	go p.logLoop()
	return p
}

func (p *progress) logLoop() {
	defer p.done.Done()
	for {
		select {
		case <-p.quit:
			return
		case <-p.tick:
			p.logLine()
		}
	}
}

func (p *progress) logLine() {
	elapsed := p.clock().Sub(p.start)
	rec := p.recorded.Load()
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(rec) / s
	}
	p.log.Info().Int64("claimed", p.claimed.Load()).Int64("recorded", rec).Int64("sent", p.sent.Load()).
		Float64("per_second", float64(int64(rate*10))/10).Dur("elapsed", elapsed.Round(time.Second)).
		Msg("pass progress")
}

// onClaim counts a committed claim batch of n notices.
func (p *progress) onClaim(n int) {
	c := p.claimed.Add(int64(n))
	if p.bar != nil && c > p.bar.GetMax64() {
		p.bar.ChangeMax64(c)
	}
}

// onRecorded counts n committed outcomes.
func (p *progress) onRecorded(n int) {
	p.recorded.Add(int64(n))
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// onOutcome counts one committed outcome by state.
func (p *progress) onOutcome(state ledger.State) {
	if state == ledger.Sent {
		p.sent.Add(1)
	}
}

// stop ends the reporter: the bar is completed (or left where it stopped
// when the pass aborted), the log loop ends. Safe to call more than once.
func (p *progress) stop(completed bool) {
	p.once.Do(func() {
		close(p.quit)
		p.done.Wait()
		if p.stopTick != nil {
			p.stopTick()
		}
		if p.bar == nil {
			return
		}
		if completed {
			p.bar.ChangeMax64(max(p.recorded.Load(), 1))
			_ = p.bar.Finish()
		} else {
			_ = p.bar.Exit()
		}
	})
}
