package scan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/clock"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/send"
)

// Outcome batching: at most recordBatch outcomes per statement (the
// planner keeps an index scan up to about 1k keys), and none waits longer
// than recordEvery before its commit.
const (
	recordBatch    = 1000
	recordEvery    = 200 * time.Millisecond
	recordAttempts = 4
	recordTimeout  = 30 * time.Second
)

// Shutdown: once the pass's context is cancelled (SIGTERM), the sends in
// flight (at most send.DefaultSendTimeout) and every write of their
// outcomes must end within Config.ShutdownGrace, default
// DefaultShutdownGrace; what is not recorded by then stays in quarantine,
// which is safe. The quarantine count that follows takes at most
// ShutdownQuarantineTimeout. With cmd/scan's 10s metrics push, a stopped
// pass exits within 55s: k8s/cronjob.yaml gives it 90s.
const (
	DefaultShutdownGrace      = 40 * time.Second
	ShutdownQuarantineTimeout = 5 * time.Second
)

// errShutdownGrace is the cause of the writes cut by Config.ShutdownGrace.
var errShutdownGrace = errors.New("shutdown grace over: outcomes not recorded stay in quarantine")

// recorder commits the outcomes of the pass's sends in batches.
type recorder struct {
	db     *sqlx.DB
	runID  string
	clock  clock.Clock // the pass's (Config.Clock): readings, the batch timer, the back-off and the grace
	log    zerolog.Logger
	hooks  Hooks
	c      *counters
	cancel context.CancelCauseFunc
	flow   *flow // told of every result, so that the producer claims more
	// grace bounds the writes once ctx is cancelled (Config.ShutdownGrace).
	grace time.Duration
	// next takes the subscription ids of the notices that hand over to
	// the next channel (handsOver), once recorded: the next channel's
	// stage's (nil: none).
	next *handoff
	// channel is the stage's; hasher digests the address of a recipient
	// who opted out (send.ErrUnsubscribed) for the channel's suppression
	// list, entered at now with the outcome's batch.
	channel string
	hasher  *notice.AddressHasher
	now     time.Time
	optOut  []ledger.Suppression

	buf     []ledger.Outcome
	pending []pendingMeta
	failed  error
	// misconfigured is set when the sender reported a configuration
	// problem (TLS or credentials refused): the pass aborts.
	misconfigured error
	// sender names the stage's sender in each outcome (Outcome.Sender)
	// when it is a single one; failover is the stage's sender when it is
	// a send.Failover, which names each attempt's sender itself (nil
	// otherwise).
	sender   string
	failover *send.Failover
}

type pendingMeta struct {
	domain  string
	claimed time.Time
	started time.Time // zero: never handed to the sender
	waited  time.Duration
	state   ledger.State
	id      string // the subscription id
}

// run consumes results until the channel closes. Outcomes are written even
// after ctx is cancelled (a shutdown still records what happened); if the
// database refuses them, the pass is cancelled and the claims concerned stay
// in quarantine.
func (r *recorder) run(ctx context.Context, results <-chan send.Result) error {
	wctx, stop := graceContext(ctx, r.clock, r.grace)
	defer stop()
	tick := r.clock.NewTimer(recordEvery)
	defer tick.Stop()
	for {
		select {
		case res, ok := <-results:
			if !ok {
				r.flush(wctx)
				if r.failed == nil && r.misconfigured != nil {
					return r.misconfigured
				}
				return r.failed
			}
			r.add(res)
			r.flow.Done(send.DomainOf(res.Notice))
			if len(r.buf) >= recordBatch {
				r.flush(wctx)
			}
		case <-tick.C():
			r.flush(wctx)
			tick.Reset(recordEvery)
		}
	}
}

func (r *recorder) add(res send.Result) {
	o := ledger.Outcome{Key: res.Notice.Key, PeriodStart: res.Notice.PeriodStart, Attempts: res.Attempts, Digest: res.Digest, Message: res.Raw, Kept: res.Kept,
		Sender: r.senderOf(res)}
	class := send.Classify(res.Err)
	switch class {
	case 0:
		if h := r.hooks.AfterAccepted; h != nil {
			h(res.Notice.Key)
		}
		o.State, o.SentAt, o.ProviderID = ledger.Sent, res.Done, res.Receipt.ProviderID
		later := r.failover != nil && r.failover.Later(res.Receipt.Sender)
		r.c.add(func(x *Summary) {
			x.Sent++
			if later {
				x.Failover++
			}
		})
	case send.Transient:
		o.State, o.Error = ledger.Retry, res.Err.Error()
		r.c.add(func(x *Summary) { x.Retry++ })
		if r.unusable(res.Err) && r.misconfigured == nil {
			// Every further send would fail the same way (the dispatcher
			// already retried this one): stop the pass (exit 1) instead of
			// turning every claim into a retry. The rest come back as not
			// attempted and are recorded retry.
			r.misconfigured = fmt.Errorf("sender unusable: %w", res.Err)
			r.cancel(r.misconfigured)
		}
	case send.Permanent:
		o.State, o.Error = ledger.Failed, res.Err.Error()
		r.c.add(func(x *Summary) { x.Failed++ })
		r.noteOptOut(res)
	default:
		// Unknown: the provider may have the message. The claim stays in
		// quarantine until evidence (reconcile) or an operator settles it.
		o.State, o.Error = ledger.Claimed, res.Err.Error()
		r.c.add(func(x *Summary) { x.Ambiguous++ })
	}
	// One line per notice, at debug: the batch lines and the summary say
	// how many; an ambiguous outcome is the exception an operator must
	// settle, so it is a warning that names the key's prefix.
	ev := r.log.Debug()
	if o.State == ledger.Claimed {
		ev = r.log.Warn()
	}
	ev.Str("key", notice.Short(o.Key)).Str("domain", res.Notice.Domain).Str("outcome", string(o.State)).
		Int("attempts", res.Attempts).Str("error", o.Error).Msg("notice outcome")
	r.buf = append(r.buf, o)
	r.pending = append(r.pending, pendingMeta{domain: res.Notice.Domain, claimed: res.Notice.ClaimedAt, started: res.Started, waited: res.Waited, state: o.State, id: res.Notice.SubscriptionID})
}

// senderOf names the sender res's attempt went through: the Failover's
// pick (the accepting or the failing sender), else the single sender;
// "" when nothing reached one (not attempted: the pass was stopping).
func (r *recorder) senderOf(res send.Result) string {
	switch {
	case r.failover != nil && res.Receipt.Sender != "":
		return res.Receipt.Sender
	case r.failover != nil:
		return send.SenderOf(res.Err)
	case errors.Is(res.Err, send.ErrNotAttempted):
		return ""
	}
	return r.sender
}

// unusable reports whether err proves that the stage's sender cannot send
// (its credentials or account refused, the service unreachable after the
// dispatcher's retries), so that the pass stops: never while a Failover
// still has a sender to move to.
func (r *recorder) unusable(err error) bool {
	if !errors.Is(err, send.ErrMisconfigured) && !errors.Is(err, send.ErrUnreachable) {
		return false
	}
	return r.failover == nil || !r.failover.CanMoveOn(err)
}

func (r *recorder) flush(ctx context.Context) {
	if len(r.buf) == 0 {
		return
	}
	defer func() { r.buf, r.pending = r.buf[:0], r.pending[:0] }()
	if r.failed != nil {
		r.logUnrecorded()
		return
	}
	var err error
	for attempt := 1; attempt <= recordAttempts; attempt++ {
		wctx, cancel := context.WithTimeout(ctx, recordTimeout)
		_, err = ledger.RecordOutcomes(wctx, r.db, r.runID, r.clock.Now(), r.buf)
		cancel()
		if err == nil {
			break
		}
		if cause := context.Cause(ctx); cause != nil {
			err = fmt.Errorf("%w (%v)", cause, err)
			break
		}
		r.log.Warn().Err(err).Int("attempt", attempt).Msg("recording outcomes failed; retrying")
		if attempt < recordAttempts {
			backoff := r.clock.NewTimer(time.Duration(attempt) * 500 * time.Millisecond)
			select {
			case <-backoff.C():
			case <-ctx.Done():
			}
			backoff.Stop()
		}
	}
	if err != nil {
		r.failed = fmt.Errorf("record outcomes: %w", err)
		r.cancel(r.failed)
		r.logUnrecorded()
		return
	}
	r.flow.Committed(len(r.buf))
	now := r.clock.Now()
	if h := r.hooks.Outcome; h != nil {
		for _, m := range r.pending {
			toSend := time.Duration(-1)
			if !m.started.IsZero() {
				toSend = max(m.started.Sub(m.claimed), 0)
			}
			h(m.state, m.domain, now.Sub(m.claimed), toSend, m.waited)
		}
	}
	if h := r.hooks.AfterOutcomeCommit; h != nil {
		h(len(r.buf))
	}
	r.handOver()
	r.addOptOuts(ctx)
}

// handOver gives the next channel's stage the subscriptions of the batch
// just recorded whose outcome hands over (handsOver).
func (r *recorder) handOver() {
	if r.next == nil {
		return
	}
	var ids []string
	for _, m := range r.pending {
		if handsOver(m.state) {
			ids = append(ids, m.id)
		}
	}
	r.next.Push(ids...)
}

// noteOptOut keeps, for the suppression list, the address of a recipient
// who told the provider to send nothing more (send.ErrUnsubscribed: the
// sender's classification of its provider's opt-out code), with the
// provider's words (never the address) as the reason.
func (r *recorder) noteOptOut(res send.Result) {
	var se *send.Error
	if !errors.Is(res.Err, send.ErrUnsubscribed) || !errors.As(res.Err, &se) || r.hasher == nil {
		return
	}
	r.optOut = append(r.optOut, ledger.Suppression{Channel: r.channel, Digest: r.hasher.Digest(r.channel, res.Notice.To),
		Reason: se.Err.Error(), Source: ledger.SuppressedByProvider, NoticeKey: res.Notice.Key, KeyID: r.hasher.KeyID()})
}

// addOptOuts enters the opt-outs of the batch just recorded on the
// suppression list. A failure is logged: the outcome (failed) is
// recorded, and the provider refuses the address again next time.
func (r *recorder) addOptOuts(ctx context.Context) {
	if len(r.optOut) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	if _, err := ledger.SuppressionAdd(wctx, r.db, r.now, r.optOut); err != nil {
		r.log.Warn().Err(err).Int("opted_out", len(r.optOut)).Msg("could not add the recipients who opted out to the suppression list")
	}
	r.optOut = r.optOut[:0]
}

// logUnrecorded names (by key prefix) the outcomes the ledger never got:
// those claims stay in quarantine.
func (r *recorder) logUnrecorded() {
	for _, o := range r.buf {
		r.log.Error().Str("key", notice.Short(o.Key)).Str("outcome", string(o.State)).
			Msg("outcome not recorded; the claim stays in quarantine (settle it with `scan resolve`)")
	}
}

// graceContext returns a context for the recorder's writes: not cancelled
// with ctx, so a shutdown still records what happened, but cancelled
// (cause errShutdownGrace) grace after ctx is, so that a slow or locked
// database cannot hold the process past its termination grace period.
// stop releases it. The grace is measured on clk.
func graceContext(ctx context.Context, clk clock.Clock, grace time.Duration) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stopAfter := context.AfterFunc(ctx, func() {
		// Runs at most once, in its own goroutine: it waits out the grace
		// unless stop ends the writes first.
		t := clk.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C():
			cancel(errShutdownGrace)
		case <-wctx.Done():
		}
	})
	return wctx, func() {
		stopAfter()
		cancel(nil)
	}
}
