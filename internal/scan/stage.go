package scan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"scan/internal/budget"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/pace"
	"scan/internal/plan"
	"scan/internal/send"
)

// A channel is a value (issue 34): what differs between email and sms is
// a channel's sender, renderer, pace and retries, not its pipeline. One
// stage type runs any channel: a send.Dispatcher that renders with the
// channel's renderer, paces by the channel's limits and sends with its
// sender, and the shared batched recorder (record.go) that commits its
// outcomes, maps them onto the ledger's states, stops the pass when the
// sender proves unusable, and hands what it failed for good to the next
// channel's stage (handsOver). Adding a channel is one more channelOf
// case, its selections, and its classify branch.

// candidate is a due notice read from the source and not yet claimed;
// the stage's planner (internal/plan) queues it by its recipient domain.
type candidate struct {
	due
	// reclaim: a ledger row in state retry, taken back by compare-and-set
	// rather than inserted.
	reclaim bool
	// sel is the key of the window group the notice belongs to.
	sel string
}

func (c candidate) key() string    { return c.claim.Key }
func (c candidate) domain() string { return send.DomainOf(c.n) }

type (
	planner = plan.Planner[candidate]
	flow    = plan.Flow
)

// channel is one channel's parts, as the pass runs them.
type channel struct {
	name   string // notice.ChannelEmail, notice.ChannelSMS
	sender send.Sender
	// senderName names sender in the ledger's sender column when it is a
	// single sender (a send.Failover names each attempt's itself).
	senderName string
	renderer   notice.Renderer
	// limits pace the channel's sends: per recipient domain and overall
	// for email, one bucket (rate.sms) for a text channel, whose notices
	// all name the channel as their domain (textDomain).
	limits pace.Limits
	// budget leases the channel's send slots from the buckets every pass
	// on the ledger shares (issue 38, channelOf); nil: paced locally only.
	budget      send.Budget
	concurrency int
	retry       send.RetryPolicy
}

// textSender names the sms channel's sender (Config.SMS, Twilio's
// Messages API) in the ledger's sender column.
const textSender = "twilio"

// failoverOf returns s as a *send.Failover, nil when it is a single sender.
func failoverOf(s send.Sender) *send.Failover {
	f, _ := s.(*send.Failover)
	return f
}

// textDomain is the bucket key of a text channel's notices: one bucket
// for the channel, never the number (which no log or label may carry);
// for sms the fleet budget's key (budget.SMSDomain, no host name).
func textDomain(channel string) string {
	if channel == notice.ChannelSMS {
		return budget.SMSDomain
	}
	return channel + ":"
}

// channelOf returns the parts of the named channel for this pass: the
// policy's whole rates, and the fleet's budget beside them (issue 38):
// every pass on the ledger leases its send slots from the same rows
// (internal/budget), so the policy's rates bound the sum over shards,
// concurrent runs and catch-ups, and each pass keeps the whole policy
// locally, claiming by its pace. A channel without a rate limit at all
// has no budget and never leases.
func (p *Pass) channelOf(name string) channel {
	if name == notice.ChannelEmail {
		ch := channel{name: name, sender: p.sender, senderName: p.cfg.SenderName, renderer: p.renderer, limits: p.cfg.Policy.Rate,
			concurrency: p.cfg.Policy.Concurrency, retry: p.cfg.Retry}
		if ch.limits.Limited() {
			ch.budget = budget.New(p.db, ch.limits, plan.ClaimHorizon)
		}
		return ch
	}
	// A text goes once per claim: a Transient refusal (429) is recorded
	// retry for the next pass rather than tried again at once.
	ch := channel{name: name, sender: p.cfg.SMS, senderName: textSender, renderer: notice.Texts(p.renderer),
		limits: pace.Limits{Domains: map[string]pace.Bucket{textDomain(name): p.cfg.Policy.Rate.SMS}}, concurrency: 1,
		retry: send.RetryPolicy{Attempts: 1}}
	if p.cfg.Policy.Rate.SMS.PerSecond > 0 {
		ch.budget = budget.New(p.db, p.cfg.Policy.Rate, plan.ClaimHorizon)
	}
	return ch
}

// stage is one channel's sending half while it runs: the planner that
// sizes its claims (internal/plan), its dispatcher, the flow of its claims in
// flight, and its recorder. ctx is the producer's: cancelled (with its
// cause) by the recorder when a write fails or the sender proves
// unusable.
type stage struct {
	ch     channel
	ctx    context.Context
	cancel context.CancelCauseFunc
	plan   *planner
	d      *send.Dispatcher
	fl     *flow
	done   <-chan error
	next   *handoff // the next channel's stage's (nil: none)
	// claims is claimPicked's buffer of new claims, reused batch after
	// batch (a claim is large); the stage's producer alone uses it.
	claims []ledger.Claim
}

// startStage starts ch's dispatcher and its recorder, whose outcomes are
// written even after ctx is cancelled (recorder.run); what it fails for
// good goes to next (nil: no next channel in this pass). A sender the
// dispatcher refuses is a *ConfigError.
func (p *Pass) startStage(ctx context.Context, ch channel, c *counters, next *handoff) (*stage, error) {
	pctx, cancel := context.WithCancelCause(ctx)
	d, err := send.NewDispatcher(pctx, send.DispatcherConfig{
		Sender: ch.sender, Renderer: ch.renderer, Limits: ch.limits,
		// The producer claims no further ahead than the buckets allow
		// (internal/plan), so the dispatcher never holds more than a batch or
		// two: its own bound is only a backstop.
		Concurrency: ch.concurrency, MaxQueued: 2 * p.cfg.BatchSize, Retry: ch.retry,
		Clock: p.cfg.Clock, Budget: ch.budget,
		// Each message is compressed for proof of notice in the worker that
		// sent it, not by the recorder, which writes outcomes one batch at a
		// time.
		Keep: ledger.KeepMessage,
	})
	if err != nil {
		cancel(nil)
		return nil, &ConfigError{Field: "sender", Msg: err.Error()}
	}
	st := &stage{ch: ch, ctx: pctx, cancel: cancel, d: d, fl: plan.NewFlow(), next: next}
	st.plan = plan.NewPlanner(st.fl, ch.limits, p.cfg.BatchSize, ch.concurrency, candidate.key, candidate.domain)
	hasher, _ := notice.NewAddressHasher(p.cfg.Secret) // checked by New; the recorder's own
	rec := &recorder{db: p.db, runID: p.cfg.RunID, clock: p.cfg.Clock, log: p.log, hooks: p.cfg.Hooks, c: c, cancel: cancel,
		grace: p.cfg.ShutdownGrace, flow: st.fl, next: next, channel: ch.name, hasher: hasher, now: p.cfg.Now,
		sender: ch.senderName, failover: failoverOf(ch.sender)}
	st.done = startRecorder(ctx, d, rec, cancel)
	return st, nil
}

// startRecorder records d's results in its own goroutine until they end;
// the returned channel receives its error.
func startRecorder(ctx context.Context, d *send.Dispatcher, rec *recorder, cancel context.CancelCauseFunc) <-chan error {
	recDone := make(chan error, 1)
	go func() {
		// A panic here would kill the process outside run()'s recover (and
		// print unredacted): turn it into the pass's error, stop producing,
		// and keep draining so the dispatcher can finish.
		defer func() {
			if r := recover(); r != nil {
				err := fmt.Errorf("recording outcomes: panic: %v", r)
				cancel(err)
				for range d.Results() {
				}
				recDone <- err
			}
		}()
		recDone <- rec.run(ctx, d.Results())
	}()
	return recDone
}

// submit hands a claimed notice to the dispatcher, counted in flight.
// Every claimed notice goes, even on shutdown: once the run is cancelled
// the dispatcher answers at once with "not attempted", and the recorder
// releases the claim as retry instead of leaving a notice that never left
// the process in quarantine.
func (st *stage) submit(ctx context.Context, n notice.Notice) error {
	st.fl.Claimed(send.DomainOf(n), 1)
	return st.d.Submit(context.WithoutCancel(ctx), n)
}

// awaitRecorded waits until every notice the stage claimed so far has its
// outcome committed, or ctx ends.
func (st *stage) awaitRecorded(ctx context.Context) error {
	for !st.fl.AllRecorded() {
		select {
		case <-st.fl.Wake():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// finish closes the dispatcher once the producer has ended (prodErr), waits
// for the recorder, and returns the stage's error (errorCause).
func (st *stage) finish(prodErr error) error {
	st.d.Close()
	recErr := <-st.done
	err := errorCause(st.ctx, prodErr, recErr)
	st.cancel(nil)
	return err
}

// errorCause chooses the error a stage that did not complete reports: the
// cause that cancelled the producer (the recorder's sender or database
// failure, a recorder panic) rather than the bare cancellation it saw,
// unless the recorder failed itself; nil when both ended well.
func errorCause(pctx context.Context, prodErr, recErr error) error {
	err := errors.Join(prodErr, recErr)
	if err == nil {
		return nil
	}
	if cause := context.Cause(pctx); cause != nil && !errors.Is(cause, context.Canceled) && recErr == nil {
		return cause
	}
	return err
}

// handsOver is the one rule for "the next channel": whether an outcome
// of a notice, recorded, hands its subscription to the next channel's
// stage in this pass. It is the ledger's rule (ledger.CarriesOn: refused
// for good, or undeliverable by the provider's evidence, or accepted and
// unconfirmed past the kind's confirm_within, issue 36), asked of an
// outcome just recorded: no evidence can exist yet for it, so in this
// pass only failed hands over. The evidence that comes later is asked by
// the next passes' sms sweep, with the same rule in SQL
// (ledger.CarriedOnSQL in the source's subscriptionListFallback).
func handsOver(state ledger.State) bool {
	return ledger.CarriesOn(ledger.Row{State: state}, time.Time{}, 0)
}
