package scan

import (
	"context"
	"slices"
	"sync"

	"github.com/jmoiron/sqlx"

	"scan/internal/address"
	"scan/internal/idqueue"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/subscription"
	"scan/internal/suppress"
)

// The sms channel (issue 30): a kind with channels [email, sms] goes by
// sms when email cannot reach the customer while its window is open. The
// pass's sms stage runs beside the email stage, in its own goroutine,
// with its own bucket (rate.sms) and sender (Config.SMS): neither waits
// for the other (no head-of-line blocking between channels). An sms
// notice is a notice of its own: its key is the email key's material +
// "|sms", with its own claim, attempts, quarantine and evidence.
//
// Its first sweep takes, per window group, what the ledger and the
// source already say:
//   - the notices whose email row is failed (suppressed, no usable
//     address, refused for good, or hard-bounced by evidence, which a
//     later pass finds: "in the next pass at the latest");
//   - the rows with no email row whose address is unusable (none or
//     malformed): their email notice is recorded failed
//     no_usable_address first;
//   - the sms rows in retry, re-claimed by compare-and-set.
//
// Then it takes what the email stage of the same pass fails (suppressed,
// refused for good): the email stage hands the subscription ids over
// through handoff, which never blocks it, and the sms stage reads them
// set-based (the same statement restricted to those ids, a page of ids
// at a time). When the email stage ends, the sms stage drains what is
// queued and returns; a time budget that ends first defers (counted) the
// rest to the next pass.
//
// A notice whose email row is sent, claimed (quarantine), retry or
// missed is never sent by sms. Claim, send, record, as for email: the
// claim commits before the request leaves, an answer that never came
// stays in quarantine, and no statement here is per notice: its sends go
// through the sms channel's stage (stage.go: the same dispatcher and
// batched recorder as email's, paced by rate.sms). The pass's Hooks run
// at the same boundaries as in the email stage.

// handoff carries the subscription ids whose email notice the email
// stage failed to the sms stage, without ever blocking the email stage
// (idqueue). A nil *handoff takes nothing (no sms stage in the pass).
type handoff = idqueue.Queue

// sweepStage is the pass's running sms stage (startSweeps).
type sweepStage struct {
	handoff *handoff
	done    chan error
}

// startSweeps starts the pass's sms stage beside the email stage (see
// above); nil without Config.SMS or a kind with the sms channel. An
// error of the stage cancels the pass with that cause.
func (p *Pass) startSweeps(ctx context.Context, cancel context.CancelCauseFunc, c *counters) *sweepStage {
	swept := make(chan struct{})
	p.sweptC, p.sweptDone = swept, sync.OnceFunc(func() { close(swept) })
	if p.cfg.SMS == nil && len(p.sels[notice.ChannelSMS]) > 0 {
		p.log.Warn().Msg("no sms sender: the kinds that go by sms only send nothing in this pass")
	}
	if p.cfg.SMS == nil || !p.cfg.Policy.UsesSMS() {
		return nil
	}
	if p.cfg.RedirectTo != "" {
		p.log.Warn().Msg("a staging redirect is in force: the sms channel sends nothing")
		return nil
	}
	st := &sweepStage{handoff: idqueue.New(), done: make(chan error, 1)}
	p.sweptMinted.Store(0)
	p.sweepc = p.newSweepTools()
	go func() {
		err := p.runSweeps(ctx, c, st.handoff)
		p.sweptDone()
		if err != nil {
			cancel(err)
		}
		st.done <- err
	}()
	return st
}

// queue is where the email stage hands the sms stage its failures; nil
// (taking nothing) for a pass without an sms stage.
func (st *sweepStage) queue() *handoff {
	if st == nil {
		return nil
	}
	return st.handoff
}

// wait tells the sms stage that the email stage has ended and waits for
// it to drain; nil for a pass without one.
func (st *sweepStage) wait() error {
	if st == nil {
		return nil
	}
	st.handoff.Close()
	return <-st.done
}

// runSweeps is the sms stage: the first sweep, then what the email stage
// hands over until it ends; its sends go through the sms channel's stage
// (stage.go), the same dispatcher and recorder as email's.
func (p *Pass) runSweeps(ctx context.Context, c *counters, h *handoff) error {
	st, err := p.startStage(ctx, p.channelOf(notice.ChannelSMS), c, nil)
	if err != nil {
		return err
	}
	return st.finish(p.sweeps(st.ctx, c, st, h))
}

// sweeps runs the first sweep, then one restricted to what h hands over
// until it ends.
func (p *Pass) sweeps(ctx context.Context, c *counters, st *stage, h *handoff) error {
	ps := &passState{reclaimed: map[string]int{}} // the stage's own: it runs beside the email stage
	if err := p.sweep(ctx, c, st, ps, nil); err != nil {
		return err
	}
	// The email notices after sms read what it failed, once recorded.
	if err := st.awaitRecorded(ctx); err != nil {
		return err
	}
	p.sweptDone()
	for {
		ids, done, err := h.Next(ctx, p.cfg.BatchSize)
		if err != nil || done {
			return err
		}
		if err := p.sweep(ctx, c, st, ps, ids); err != nil {
			return err
		}
	}
}

// sweep claims and sends, page by page, the sms channel's rows
// (eachSweptPage), restricted to the subscription ids ids unless nil.
func (p *Pass) sweep(ctx context.Context, c *counters, st *stage, ps *passState, ids []string) error {
	return p.eachSweptPage(ctx, p.db, ids, func(sel selection, rows []subscription.Row) error {
		return p.sweepPage(ctx, c, st, ps, sel, rows)
	})
}

// eachSweptPage reads the sms channel's rows (the fallback statement) of
// every window group whose kind goes by sms (sms-first kinds, then the
// email kinds with an sms fallback), restricted to the subscription ids
// ids unless nil, and hands fn each page with its selection, which
// carries the sms stage's own copy of its due rule: the pass's sweeps and
// the dry run read the same pages.
func (p *Pass) eachSweptPage(ctx context.Context, db sqlx.QueryerContext, ids []string, fn func(selection, []subscription.Row) error) error {
	for _, group := range slices.Concat(p.sels[notice.ChannelSMS], p.sels[notice.ChannelEmail]) {
		for _, sel := range group {
			if !p.kinds[sel.Kind].HasSMS() {
				continue
			}
			sel.Due = p.sweepc.dueOf(sel)
			list := func(after *string) ([]subscription.Row, error) {
				return p.src.FallbackPage(ctx, db, sel, after, ids)
			}
			if err := subscription.EachRowPage(p.cfg.BatchSize, list, func(rows []subscription.Row) error { return fn(sel, rows) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// sweepTools are the sms stage's own resolvers, none of which is safe for
// concurrent use with the email stage's.
type sweepTools struct {
	content *content
	keyer   *notice.Keyer
	keys    suppress.Keys                      // the list's hashers: current and previous secrets
	due     map[string]*subscription.DueBounds // by selection key: sel.Due's, with a cache of its own
}

func (p *Pass) newSweepTools() *sweepTools {
	keyer, _ := notice.NewKeyer(p.cfg.Secret)                        // checked by New
	keys, _ := suppress.NewKeys(p.cfg.Secret, p.cfg.PreviousSecrets) // checked by New
	return &sweepTools{content: p.content.fork(), keyer: keyer, keys: keys, due: map[string]*subscription.DueBounds{}}
}

// dueOf is the stage's own copy of sel's due rule (nil without one).
func (t *sweepTools) dueOf(sel selection) *subscription.DueBounds {
	if sel.Due == nil {
		return nil
	}
	if t.due[sel.Key()] == nil {
		t.due[sel.Key()] = sel.Due.Copy()
	}
	return t.due[sel.Key()]
}

// sweepDryRun counts, inside the dry run's read-only transaction, what the
// sms stage's first sweep would send now (WouldSMS: new sms notices and
// sms rows in retry, less the numbers on the sms suppression list), the
// notices it would record without a usable address, and the email
// notices after sms that its failures would let the email stage mail.
// The email notices the email stage would fail during the pass
// (suppressed, refused) are not foreseen.
func (p *Pass) sweepDryRun(ctx context.Context, tx sqlx.QueryerContext, out *DryRunSummary) error {
	if !p.cfg.Policy.UsesSMS() {
		return nil
	}
	p.sweepc = p.newSweepTools()
	return p.eachSweptPage(ctx, tx, nil, func(sel selection, rows []subscription.Row) error {
		bt := p.sweepSort(sel, rows)
		hit, err := bt.listed(ctx, tx)
		if err != nil {
			return err
		}
		failed := map[string]bool{} // the rows whose sms notice would fail, for email after sms
		for _, cl := range bt.noPhone {
			failed[cl.SubscriptionID] = true
		}
		for i, h := range hit {
			cd := bt.cands[i]
			failed[cd.claim.SubscriptionID] = failed[cd.claim.SubscriptionID] || h
			if !h {
				out.WouldSMS++
			}
			if !h && !cd.reclaim {
				out.smsMint++ // a new key, for --max-mint
			}
		}
		out.WouldSMSUnreached += len(bt.noPhone)
		for _, r := range rows {
			if failed[r.ID] && p.kinds[sel.Kind].EmailAfterSMS() && p.classify(p.content, r, ask{sel: sel, channel: notice.ChannelEmail}).is == dueNow {
				out.WouldEmailAfterSMS++
			}
		}
		return nil
	})
}

// sweepBatch is what one page of the sms stage found.
type sweepBatch struct {
	noEmail []ledger.Claim // email notices to record failed no_usable_address
	noPhone []ledger.Claim // sms notices to record failed no_usable_address
	// bad are email notices with a malformed address and no usable phone:
	// no channel left, recorded retry invalid_address (recordInvalid).
	bad []ledger.Claim
	// cands are the sms notices to claim, and the sms rows in retry to
	// re-claim (reclaim), as the stage's planner takes them.
	cands []candidate
	quiet int
	// after: per email key of noEmail, the row's sms key. The sms notice
	// waits for its email notice to be recorded failed by this pass: if
	// the email stage claimed it first (the row gained an address since
	// it was read), it is not texted.
	after map[string]string
}

// sweepPage claims and sends one page of the sms stage.
func (p *Pass) sweepPage(ctx context.Context, c *counters, st *stage, ps *passState, sel selection, rows []subscription.Row) error {
	bt := p.sweepSort(sel, rows)
	if bt.quiet > 0 {
		c.add(func(x *Summary) { x.Deferred += bt.quiet; x.DeferredQuietHours += bt.quiet })
	}
	if err := p.sweepUnreached(ctx, c, &bt); err != nil {
		return err
	}
	// Claimed as the email stage's are, by the stage's planner: what the
	// channel's bucket sends over the claim horizon, the next claim once
	// half of it is free. A time budget ending mid-page defers the rest
	// instead of sending a whole page at the channel's pace past it.
	pl := st.plan
	for _, cd := range bt.cands {
		pl.Offer(cd)
	}
	for !pl.Empty() {
		if p.cfg.MaxDuration > 0 && p.cfg.Clock.Now().Sub(p.start) >= p.cfg.MaxDuration {
			n := len(pl.Drain())
			c.add(func(x *Summary) { x.Deferred += n })
			return nil
		}
		picked := pl.Pick(p.cfg.Clock.Now())
		if len(picked) == 0 {
			select {
			case <-st.fl.Wake():
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if err := p.claimPicked(ctx, st, c, ps, picked); err != nil {
			return err
		}
	}
	return nil
}

// sweepSort sorts a page's rows into what to record, claim or re-claim.
func (p *Pass) sweepSort(sel selection, rows []subscription.Row) sweepBatch {
	bt := sweepBatch{after: map[string]string{}}
	k := p.kinds[sel.Kind]
	for _, r := range rows {
		v := p.classify(p.sweepc.content, r, ask{sel: sel, channel: notice.ChannelSMS})
		if !v.keyed {
			continue // no notice tuple, or not yet due in its zone
		}
		t := v.dn.claim.Tuple
		if r.EmailState == nil && !k.SMSFirst() {
			if _, err := address.Parse(deref(r.Email)); err == nil {
				continue // a usable address with no email row yet: the email stage's (deferred)
			}
			e := v.dn.claim
			e.Key = p.sweepc.keyer.Key(t)
			if deref(r.Email) != "" && v.is == unreachable && r.LedgerKey == nil {
				bt.bad = append(bt.bad, e) // malformed, and no phone either
				continue
			}
			bt.noEmail = append(bt.noEmail, e)
			bt.after[e.Key] = p.sweepc.keyer.ChannelKey(t, notice.ChannelSMS)
			if r.LedgerKey != nil {
				bt.after[e.Key] = *r.LedgerKey
			}
		}
		p.sweepNotice(r, t, v, &bt)
	}
	return bt
}

// sweepNotice adds row r's sms notice (its verdict v) to bt: to claim,
// re-claim, or record without a usable number; unless its content is
// invalid or the quiet hours defer it.
func (p *Pass) sweepNotice(r subscription.Row, t notice.Tuple, v verdict, bt *sweepBatch) {
	cl := v.dn.claim
	cl.Key = p.sweepc.keyer.ChannelKey(t, notice.ChannelSMS)
	if r.LedgerKey != nil {
		cl.Key = *r.LedgerKey
	}
	switch v.is {
	case unreachable:
		if r.Phone != nil && *r.Phone != "" {
			p.log.Warn().Str("subscription_id", subscription.LogID(r.ID)).Str("kind", cl.Kind).Msg("phone is not E.164: the sms channel is unusable for the row")
		}
		if r.LedgerKey == nil {
			bt.noPhone = append(bt.noPhone, cl)
		}
		return
	case deferred:
		bt.quiet++
		return
	case dueNow:
	default: // invalid content: skipped
		return
	}
	n := v.dn.n
	n.Key, n.CancelToken = cl.Key, p.sweepc.keyer.CancelToken(t)
	cl.AddressHMAC, cl.PreviousHMACs = p.sweepc.keys.Digests(notice.ChannelSMS, v.dn.addr, true)
	bt.cands = append(bt.cands, candidate{due: due{claim: cl, n: n}, reclaim: r.LedgerKey != nil})
}

// sweepUnreached records the page's notices without a usable address.
// The numbers on the sms suppression list are found by the claim
// statements, as the email stage's addresses are (claimPicked).
func (p *Pass) sweepUnreached(ctx context.Context, c *counters, bt *sweepBatch) error {
	emailOpt := ledger.ClaimOptions{Now: p.cfg.Now, RunID: p.cfg.RunID, Channel: notice.ChannelEmail}
	smsOpt := emailOpt
	smsOpt.Channel = notice.ChannelSMS
	a, err := ledger.RecordUnreached(ctx, p.db, emailOpt, ledger.ReasonNoAddress, bt.noEmail)
	if err != nil {
		return err
	}
	bt.dropUnrecorded(a)
	b, err := ledger.RecordUnreached(ctx, p.db, smsOpt, ledger.ReasonNoAddress, bt.noPhone)
	if err != nil {
		return err
	}
	c.add(func(x *Summary) { x.NoUsableAddress += len(a) + len(b) })
	return p.recordInvalid(ctx, c, bt.bad)
}

// listed reports which of bt's notices the channel's suppression list
// holds.
func (bt *sweepBatch) listed(ctx context.Context, db sqlx.QueryerContext) ([]bool, error) {
	digests := make([][]byte, len(bt.cands))
	for i, cd := range bt.cands {
		digests[i] = cd.claim.AddressHMAC
	}
	return ledger.SuppressionMatch(ctx, db, notice.ChannelSMS, digests)
}

// dropUnrecorded takes out of bt the sms notices whose email notice this
// pass did not record failed (recorded: the email keys it inserted).
func (bt *sweepBatch) dropUnrecorded(recorded []string) {
	for _, k := range recorded {
		delete(bt.after, k)
	}
	if len(bt.after) == 0 {
		return
	}
	drop := map[string]bool{}
	for _, sk := range bt.after {
		drop[sk] = true
	}
	bt.noPhone = slices.DeleteFunc(bt.noPhone, func(cl ledger.Claim) bool { return drop[cl.Key] })
	bt.cands = slices.DeleteFunc(bt.cands, func(cd candidate) bool { return drop[cd.claim.Key] })
}
