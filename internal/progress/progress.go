// Package progress reports a running pass to the people watching it: a
// bar on a terminal, else a log line at every tick.
package progress

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/schollz/progressbar/v3"

	"scan/internal/ledger"
)

// Every is how often a pass without a terminal logs its progress.
const Every = 5 * time.Second

// Reporter reports a running pass. On a terminal it draws a bar of the
// outcomes recorded against the notices due (a cheap count taken before
// the pass; raised if the pass claims more), with rate and ETA. Without a
// terminal it logs one "pass progress" line at every tick instead
// (claimed, recorded, sent, rate, elapsed), so a long pass in a log
// collector is visibly alive.
//
// Its hooks run on the pass's goroutines; every method is safe for
// concurrent use.
type Reporter struct {
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

// NewBar returns a progress reporter drawing a bar of total
// notices on w.
func NewBar(w io.Writer, total int, clock func() time.Time) *Reporter {
	p := &Reporter{clock: clock, start: clock(), quit: make(chan struct{})}
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

// NewLog returns a progress reporter that logs a line on log at every
// tick until Stop, which calls stopTick (nil for none) to stop the ticker.
func NewLog(log zerolog.Logger, tick <-chan time.Time, stopTick func(), clock func() time.Time) *Reporter {
	p := &Reporter{clock: clock, start: clock(), log: log, tick: tick, stopTick: stopTick, quit: make(chan struct{})}
	p.done.Add(1)
	go p.logLoop()
	return p
}

func (p *Reporter) logLoop() {
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

func (p *Reporter) logLine() {
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

// OnClaim counts a committed claim batch of n notices.
func (p *Reporter) OnClaim(n int) {
	c := p.claimed.Add(int64(n))
	if p.bar != nil && c > p.bar.GetMax64() {
		p.bar.ChangeMax64(c)
	}
}

// OnRecorded counts n committed outcomes.
func (p *Reporter) OnRecorded(n int) {
	p.recorded.Add(int64(n))
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// OnOutcome counts one committed outcome by state.
func (p *Reporter) OnOutcome(state ledger.State) {
	if state == ledger.Sent {
		p.sent.Add(1)
	}
}

// Stop ends the reporter: the bar is completed (or left where it stopped
// when the pass aborted), the log loop ends. Safe to call more than once.
func (p *Reporter) Stop(completed bool) {
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
