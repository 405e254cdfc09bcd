package scan

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"golang.org/x/time/rate"

	"scan/internal/address"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/send"
	"scan/internal/subscription"
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
// through smsHandoff, which never blocks it, and the sms stage reads them
// set-based (the same statement restricted to those ids, a page of ids
// at a time). When the email stage ends, the sms stage drains what is
// queued and returns; a time budget that ends first defers (counted) the
// rest to the next pass.
//
// A notice whose email row is sent, claimed (quarantine), retry or
// missed is never sent by sms. Claim, send, record, as for email: the
// claim commits before the request leaves, an answer that never came
// stays in quarantine, and no statement here is per notice except the
// outcome of each send (one a second at Twilio's pace). The pass's Hooks
// run at the same boundaries as in the email stage.

// recordMissedSMS records as missed (channel sms, the sms key) every
// notice of a kind that goes by sms first whose window closed with no sms
// row while the charge is still ahead, as recordMissed does for email.
func (p *Pass) recordMissedSMS(ctx context.Context, c *counters) error {
	opt := ledger.ClaimOptions{State: ledger.Missed, Now: p.cfg.Now, RunID: p.cfg.RunID, Channel: notice.ChannelSMS}
	for _, group := range p.smsSels {
		for _, sel := range group {
			list := func(after *string) ([]subscription.Row, error) {
				return p.src.listClosedSMS(ctx, p.db, sel, p.cfg.Now, after, p.cfg.BatchSize)
			}
			err := eachRowPage(p.cfg.BatchSize, list, func(rows []subscription.Row) error {
				won, err := ledger.Insert(ctx, p.db, opt, p.missedClaims(sel, notice.ChannelSMS, rows))
				if err != nil {
					return err
				}
				c.add(func(x *Summary) { x.Missed += len(won) })
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// smsHandoff carries the subscription ids whose email notice the email
// stage failed to the sms stage, without ever blocking the email stage:
// an unbounded list under a mutex and a one-slot wake-up signal. A nil
// *smsHandoff takes nothing (no sms stage in the pass).
type smsHandoff struct {
	mu     sync.Mutex
	ids    []string
	closed bool
	wake   chan struct{}
}

func newSMSHandoff() *smsHandoff { return &smsHandoff{wake: make(chan struct{}, 1)} }

// push queues ids for the sms stage and wakes it.
func (h *smsHandoff) push(ids ...string) {
	if h == nil || len(ids) == 0 {
		return
	}
	h.mu.Lock()
	h.ids = append(h.ids, ids...)
	h.mu.Unlock()
	h.signal()
}

// close says the email stage has ended: nothing more comes.
func (h *smsHandoff) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.signal()
}

func (h *smsHandoff) signal() {
	select {
	case h.wake <- struct{}{}:
	default: // already signalled
	}
}

// next waits until ids are queued or the email stage has ended, and
// takes at most n of them; done is true once it has ended and nothing is
// left.
func (h *smsHandoff) next(ctx context.Context, n int) (ids []string, done bool, _ error) {
	for {
		h.mu.Lock()
		k := min(n, len(h.ids))
		ids, h.ids = h.ids[:k:k], h.ids[k:]
		closed := h.closed && len(h.ids) == 0
		h.mu.Unlock()
		if len(ids) > 0 || closed {
			return ids, closed && len(ids) == 0, nil
		}
		select {
		case <-h.wake:
		case <-ctx.Done():
			return nil, true, ctx.Err()
		}
	}
}

// smsStage is the pass's running sms stage (startSMS).
type smsStage struct {
	handoff *smsHandoff
	done    chan error
}

// startSMS starts the pass's sms stage beside the email stage (see
// above); nil without Config.SMS or a kind with the sms channel. An
// error of the stage cancels the pass with that cause.
func (p *Pass) startSMS(ctx context.Context, cancel context.CancelCauseFunc, c *counters) *smsStage {
	p.swept = newSweptSignal()
	if p.cfg.SMS == nil && len(p.smsSels) > 0 {
		p.log.Warn().Msg("no sms sender: the kinds that go by sms only send nothing in this pass")
	}
	if p.cfg.SMS == nil || !p.cfg.Policy.UsesSMS() {
		return nil
	}
	if p.cfg.RedirectTo != "" {
		p.log.Warn().Msg("a staging redirect is in force: the sms channel sends nothing")
		return nil
	}
	st := &smsStage{handoff: newSMSHandoff(), done: make(chan error, 1)}
	p.smsMinted.Store(0)
	p.smsc = p.newSMSTools()
	go func() {
		err := p.sendSMS(ctx, c, st.handoff)
		p.swept.done()
		if err != nil {
			cancel(err)
		}
		st.done <- err
	}()
	return st
}

// queue is where the email stage hands the sms stage its failures; nil
// (taking nothing) for a pass without an sms stage.
func (st *smsStage) queue() *smsHandoff {
	if st == nil {
		return nil
	}
	return st.handoff
}

// wait tells the sms stage that the email stage has ended and waits for
// it to drain; nil for a pass without one.
func (st *smsStage) wait() error {
	if st == nil {
		return nil
	}
	st.handoff.close()
	return <-st.done
}

// sendSMS is the sms stage: the first sweep, then what the email stage
// hands over until it ends.
func (p *Pass) sendSMS(ctx context.Context, c *counters, h *smsHandoff) error {
	b := p.cfg.Policy.Rate.Share(p.cfg.Shards).SMS
	lim := rate.NewLimiter(rate.Limit(b.PerSecond), max(b.Burst, 1))
	if err := p.smsSweep(ctx, c, lim, nil); err != nil {
		return err
	}
	p.swept.done() // the email notices after sms read what it failed
	for {
		ids, done, err := h.next(ctx, p.cfg.BatchSize)
		if err != nil || done {
			return err
		}
		if err := p.smsSweep(ctx, c, lim, ids); err != nil {
			return err
		}
	}
}

// smsSweep runs the fallback statement over every sms window group,
// restricted to the subscription ids ids unless nil.
func (p *Pass) smsSweep(ctx context.Context, c *counters, lim *rate.Limiter, ids []string) error {
	return p.eachSMSSelection(func(sel selection) error {
		list := func(after *string) ([]subscription.Row, error) {
			return p.src.listFallback(ctx, p.db, sel, p.cfg.Now, after, p.cfg.BatchSize, ids)
		}
		return eachRowPage(p.cfg.BatchSize, list, func(rows []subscription.Row) error { return p.smsPage(ctx, c, lim, sel, rows) })
	})
}

// eachSMSSelection calls fn with the selection of every window group whose
// kind goes by sms (sms-first kinds, then the email kinds with an sms
// fallback), carrying the sms stage's own copy of its due rule.
func (p *Pass) eachSMSSelection(fn func(sel selection) error) error {
	for _, group := range slices.Concat(p.smsSels, p.sels) {
		for _, sel := range group {
			if !p.kinds[sel.kind].HasSMS() {
				continue
			}
			sel.due = p.smsc.dueOf(sel)
			if err := fn(sel); err != nil {
				return err
			}
		}
	}
	return nil
}

// smsTools are the sms stage's own resolvers, none of which is safe for
// concurrent use with the email stage's.
type smsTools struct {
	content *content
	keyer   *notice.Keyer
	hasher  *notice.AddressHasher
	// previous are the list's hashers under the previous secrets.
	previous []*notice.AddressHasher
	due      map[string]*dueBounds // by selection key: sel.due's, with a cache of its own
}

func (p *Pass) newSMSTools() *smsTools {
	keyer, _ := notice.NewKeyer(p.cfg.Secret) // checked by New
	hasher, _ := notice.NewAddressHasher(p.cfg.Secret)
	previous, _ := previousHashers(p.cfg.PreviousSecrets) // checked by New
	return &smsTools{content: p.content.fork(), keyer: keyer, hasher: hasher, previous: previous, due: map[string]*dueBounds{}}
}

// dueOf is the stage's own copy of sel's due rule (nil without one).
func (t *smsTools) dueOf(sel selection) *dueBounds {
	if sel.due == nil {
		return nil
	}
	if t.due[sel.key()] == nil {
		t.due[sel.key()] = newDueBounds(sel.due.rule, sel.due.now)
	}
	return t.due[sel.key()]
}

// fork is a content resolver of the same pass with caches of its own,
// for the sms stage: content is not safe for concurrent use.
func (c *content) fork() *content {
	d := *c
	d.zones, d.locales, d.quiet = map[string]*time.Location{}, map[string]string{}, map[string]quietVerdict{}
	return &d
}

// smsDryRun counts, inside the dry run's read-only transaction, what the
// sms stage's first sweep would send now (WouldSMS: new sms notices and
// sms rows in retry, less the numbers on the sms suppression list) and
// the notices it would record without a usable address. The email
// notices the email stage would fail during the pass (suppressed,
// refused) are not foreseen.
func (p *Pass) smsDryRun(ctx context.Context, tx sqlx.QueryerContext, out *DryRunSummary) error {
	if !p.cfg.Policy.UsesSMS() {
		return nil
	}
	p.smsc = p.newSMSTools()
	return p.eachSMSSelection(func(sel selection) error {
		list := func(after *string) ([]subscription.Row, error) {
			return p.src.listFallback(ctx, tx, sel, p.cfg.Now, after, p.cfg.BatchSize, nil)
		}
		return eachRowPage(p.cfg.BatchSize, list, func(rows []subscription.Row) error {
			bt := p.smsSort(sel, rows)
			all := append(append([]ledger.Claim(nil), bt.claims...), bt.retried...)
			digests := make([][]byte, len(all))
			for i, cl := range all {
				digests[i] = cl.AddressHMAC
			}
			hit, err := ledger.SuppressionMatch(ctx, tx, notice.ChannelSMS, digests)
			if err != nil {
				return err
			}
			var unreached []ledger.Claim // for email after sms
			for i, h := range hit {
				if !h {
					out.WouldSMS++
					if i < len(bt.claims) {
						out.smsMint++ // a new key, for --max-mint
					}
				} else {
					unreached = append(unreached, all[i])
				}
			}
			out.WouldSMSUnreached += len(bt.noPhone)
			out.WouldEmailAfterSMS += p.wouldMailAfter(sel, rows, append(unreached, bt.noPhone...))
			return nil
		})
	})
}

// smsBatch is what one page of the sms stage found.
type smsBatch struct {
	noEmail []ledger.Claim // email notices to record failed no_usable_address
	noPhone []ledger.Claim // sms notices to record failed no_usable_address
	claims  []ledger.Claim // sms notices to claim
	retried []ledger.Claim // sms rows in retry (key and digest) to re-claim
	retries []string       // their keys, once the suppressed are out
	byKey   map[string]notice.Notice
	quiet   int
	// after: per email key of noEmail, the row's sms key. The sms notice
	// waits for its email notice to be recorded failed by this pass: if
	// the email stage claimed it first (the row gained an address since
	// it was read), it is not texted.
	after map[string]string
}

// smsPage claims and sends one page of the sms stage.
func (p *Pass) smsPage(ctx context.Context, c *counters, lim *rate.Limiter, sel selection, rows []subscription.Row) error {
	bt := p.smsSort(sel, rows)
	if bt.quiet > 0 {
		c.add(func(x *Summary) { x.Deferred += bt.quiet; x.DeferredQuietHours += bt.quiet })
	}
	if err := p.smsUnreached(ctx, c, &bt); err != nil {
		return err
	}
	// Claimed a chunk at a time, about a second of the bucket's sends, so
	// that a time budget ending mid-page defers the rest instead of
	// sending a whole page at rate.sms past it.
	size := smsChunk(lim, p.cfg.BatchSize)
	for len(bt.claims)+len(bt.retries) > 0 {
		if p.cfg.MaxDuration > 0 && p.cfg.Clock.Now().Sub(p.start) >= p.cfg.MaxDuration {
			n := len(bt.claims) + len(bt.retries)
			c.add(func(x *Summary) { x.Deferred += n })
			return nil
		}
		part := smsBatch{byKey: bt.byKey}
		k := min(size, len(bt.retries))
		part.retries, bt.retries = bt.retries[:k], bt.retries[k:]
		k = min(size-k, len(bt.claims))
		part.claims, bt.claims = bt.claims[:k], bt.claims[k:]
		won, err := p.smsClaim(ctx, c, &part)
		if err != nil {
			return err
		}
		for _, w := range won {
			n := bt.byKey[w.Key]
			n.Attempt, n.ClaimedAt = w.Attempt, p.cfg.Clock.Now()
			if w.CancelToken != "" {
				n.CancelToken = w.CancelToken
			}
			if err := p.smsSend(ctx, c, lim, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// smsChunk is how many sms notices the stage claims at once: what the
// bucket sends in about a second (its burst at least), at most a page.
func smsChunk(lim *rate.Limiter, batch int) int {
	return max(min(int(float64(lim.Limit())), batch), lim.Burst(), 1)
}

// smsSort sorts a page's rows into what to record, claim or re-claim.
func (p *Pass) smsSort(sel selection, rows []subscription.Row) smsBatch {
	bt := smsBatch{byKey: map[string]notice.Notice{}, after: map[string]string{}}
	k := p.kinds[sel.kind]
	for _, r := range rows {
		v := p.classify(p.smsc.content, r, ask{sel: sel, channel: notice.ChannelSMS})
		if !v.keyed {
			continue // no notice tuple, or not yet due in its zone
		}
		t := v.dn.claim.Tuple
		if r.EmailState == nil && !k.SMSFirst() {
			if _, err := address.Parse(deref(r.Email)); err == nil {
				continue // a usable address with no email row yet: the email stage's (deferred)
			}
			e := v.dn.claim
			e.Key = p.smsc.keyer.Key(t)
			bt.noEmail = append(bt.noEmail, e)
			bt.after[e.Key] = p.smsc.keyer.ChannelKey(t, notice.ChannelSMS)
			if r.LedgerKey != nil {
				bt.after[e.Key] = *r.LedgerKey
			}
		}
		p.smsNotice(r, t, v, &bt)
	}
	return bt
}

// smsNotice adds row r's sms notice (its verdict v) to bt: to claim,
// re-claim, or record without a usable number; unless its content is
// invalid or the quiet hours defer it.
func (p *Pass) smsNotice(r subscription.Row, t notice.Tuple, v verdict, bt *smsBatch) {
	cl := v.dn.claim
	cl.Key = p.smsc.keyer.ChannelKey(t, notice.ChannelSMS)
	if r.LedgerKey != nil {
		cl.Key = *r.LedgerKey
	}
	switch v.is {
	case unreachable:
		if r.Phone != nil && *r.Phone != "" {
			p.log.Warn().Str("subscription_id", logID(r.ID)).Str("kind", cl.Kind).Msg("phone is not E.164: the sms channel is unusable for the row")
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
	n.Key, n.CancelToken = cl.Key, p.smsc.keyer.CancelToken(t)
	cl.AddressHMAC = p.smsc.hasher.Digest(notice.ChannelSMS, v.dn.addr)
	for _, h := range p.smsc.previous {
		cl.PreviousHMACs = append(cl.PreviousHMACs, h.Digest(notice.ChannelSMS, v.dn.addr))
	}
	bt.byKey[cl.Key] = n
	if r.LedgerKey != nil {
		bt.retried = append(bt.retried, cl)
		return
	}
	bt.claims = append(bt.claims, cl)
}

// smsUnreached records the page's notices without a usable address and
// takes the suppressed numbers out of what it will claim.
func (p *Pass) smsUnreached(ctx context.Context, c *counters, bt *smsBatch) error {
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
	all := append(append([]ledger.Claim(nil), bt.claims...), bt.retried...)
	digests, previous := make([][]byte, len(all)), make([][][]byte, len(all))
	for i, cl := range all {
		digests[i], previous[i] = cl.AddressHMAC, cl.PreviousHMACs
	}
	hit, err := ledger.SuppressionMatchRekey(ctx, p.db, notice.ChannelSMS, digests, previous, p.smsc.hasher.KeyID())
	if err != nil {
		return err
	}
	var keep, drop []ledger.Claim
	var keepR, dropR []string
	for i, cl := range all {
		retry := i >= len(bt.claims)
		switch {
		case retry && hit[i]:
			dropR = append(dropR, cl.Key)
		case retry:
			keepR = append(keepR, cl.Key)
		case hit[i]:
			drop = append(drop, cl)
		default:
			keep = append(keep, cl)
		}
	}
	rec, err := ledger.RecordUnreached(ctx, p.db, smsOpt, ledger.ReasonSuppressed, drop)
	if err != nil {
		return err
	}
	marked, err := ledger.MarkUnreached(ctx, p.db, p.cfg.Now, ledger.ReasonSuppressed, dropR)
	if err != nil {
		return err
	}
	c.add(func(x *Summary) { x.SuppressedAddress += len(rec) + len(marked) })
	bt.claims, bt.retries = keep, keepR
	return nil
}

// dropUnrecorded takes out of bt the sms notices whose email notice this
// pass did not record failed (recorded: the email keys it inserted).
func (bt *smsBatch) dropUnrecorded(recorded []string) {
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
	dropped := func(cl ledger.Claim) bool { return drop[cl.Key] }
	bt.noPhone = slices.DeleteFunc(bt.noPhone, dropped)
	bt.claims = slices.DeleteFunc(bt.claims, dropped)
	bt.retried = slices.DeleteFunc(bt.retried, dropped)
}

// smsClaim claims the page's sms notices (one statement) and re-claims
// its retry rows (one more), each committed before anything is sent.
func (p *Pass) smsClaim(ctx context.Context, c *counters, bt *smsBatch) ([]ledger.Won, error) {
	opt := ledger.ClaimOptions{State: ledger.Claimed, Now: p.cfg.Now, RunID: p.cfg.RunID, RedirectTo: p.cfg.RedirectTo, Channel: notice.ChannelSMS}
	var won []ledger.Won
	if len(bt.retries) > 0 {
		w, err := p.claim(ctx, func(ctx context.Context) ([]ledger.Won, error) { return ledger.Reclaim(ctx, p.db, opt, bt.retries) })
		if err != nil {
			return nil, err
		}
		c.add(func(x *Summary) { x.Retried += len(w); x.SMS += len(w) })
		won = append(won, w...)
	}
	if len(bt.claims) > 0 {
		if h := p.cfg.Hooks.BeforeClaim; h != nil {
			h(len(bt.claims))
		}
		w, err := p.claim(ctx, func(ctx context.Context) ([]ledger.Won, error) { return ledger.Insert(ctx, p.db, opt, bt.claims) })
		if err != nil {
			return nil, err
		}
		c.add(func(x *Summary) { x.Minted += len(w); x.SMS += len(w) })
		p.smsMinted.Add(int64(len(w)))
		won = append(won, w...)
	}
	if h := p.cfg.Hooks.AfterClaimCommit; h != nil && len(won) > 0 {
		h(len(won))
	}
	return won, nil
}

// smsSend renders and sends one claimed sms notice at the sms bucket's
// pace and records its outcome. A sender refusing its credentials stops
// the pass (the notice is released as retry).
func (p *Pass) smsSend(ctx context.Context, c *counters, lim *rate.Limiter, n notice.Notice) error {
	out := ledger.Outcome{Key: n.Key, PeriodStart: n.PeriodStart}
	body, err := p.renderer.RenderSMS(n)
	var sendErr error
	switch {
	case err != nil:
		out.State, out.Error = ledger.Failed, "render: "+err.Error()
	case lim.Wait(ctx) != nil:
		out.State, out.Error = ledger.Retry, "not attempted: the pass was stopped"
	default:
		sum := sha256.Sum256([]byte(body))
		out.Digest = sum[:]
		var rec send.Receipt
		rec, sendErr = p.cfg.SMS.Send(ctx, &notice.Message{Notice: n, Text: body})
		out.State, out.ProviderID, out.SentAt, out.Error = smsOutcome(rec, sendErr, p.cfg.Clock.Now())
		if h := p.cfg.Hooks.AfterAccepted; h != nil && sendErr == nil {
			h(n.Key)
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if _, err := ledger.RecordOutcomes(rctx, p.db, p.cfg.RunID, p.cfg.Clock.Now(), []ledger.Outcome{out}); err != nil {
		return fmt.Errorf("record sms outcome: %w", err)
	}
	p.countOutcome(c, out.State)
	if h := p.cfg.Hooks.AfterOutcomeCommit; h != nil {
		h(1)
	}
	if errors.Is(sendErr, send.ErrUnsubscribed) {
		d := p.smsc.hasher.Digest(notice.ChannelSMS, n.To)
		if _, err := ledger.SuppressionAdd(rctx, p.db, p.cfg.Now, []ledger.Suppression{{Channel: notice.ChannelSMS, Digest: d,
			Reason: "twilio 21610: the recipient replied STOP", Source: ledger.SuppressedByProvider, NoticeKey: n.Key,
			KeyID: p.smsc.hasher.KeyID()}}); err != nil {
			return err
		}
	}
	if errors.Is(sendErr, send.ErrMisconfigured) {
		return &ConfigError{"TWILIO_AUTH_TOKEN", "Twilio refused the account's credentials: " + sendErr.Error()}
	}
	return nil
}

// smsOutcome maps a send's result to the ledger's: sent, retry (Twilio
// did not take it), failed (refused for good) or claimed (the answer was
// lost: quarantine, never resent blindly).
func smsOutcome(rec send.Receipt, err error, now time.Time) (ledger.State, string, time.Time, string) {
	switch send.Classify(err) {
	case 0:
		return ledger.Sent, rec.ProviderID, now, ""
	case send.Transient:
		return ledger.Retry, "", time.Time{}, err.Error()
	case send.Permanent:
		return ledger.Failed, "", time.Time{}, err.Error()
	}
	return ledger.Claimed, "", time.Time{}, err.Error()
}

// countOutcome adds one outcome to the summary.
func (p *Pass) countOutcome(c *counters, st ledger.State) {
	c.add(func(x *Summary) {
		switch st {
		case ledger.Sent:
			x.Sent++
		case ledger.Retry:
			x.Retry++
		case ledger.Failed:
			x.Failed++
		default:
			x.Ambiguous++
		}
	})
}
