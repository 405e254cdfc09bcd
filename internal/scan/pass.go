package scan

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/provider"
	"scan/internal/send"
	"scan/internal/subscription"
)

// keyCheckSample is how many recent ledger rows a pass re-derives to
// notice a changed secret.
const keyCheckSample = 20

// Run performs one pass. It returns the summary and, when the pass did not
// complete, an error: ErrMaxMint (nothing claimed), a *ConfigError, the
// context's error on shutdown, or a database or sender failure. A pass that
// ends in error is safe to run again.
//
// Its steps: check that the ledger's database was not restored or failed
// over since the last pass (ledger.ErrRestored: nothing claimed), check the secret against the ledger's keys, refuse a pass
// that would mint more than --max-mint, expire the retries whose window
// closed, send (claim, dispatch and record) the due notices, then count
// what the pass left: the missed, the deferred and the suppressed.
func (p *Pass) Run(ctx context.Context) (Summary, error) {
	start := p.cfg.Clock.Now()
	p.start = start
	c := &counters{Summary: Summary{RunID: p.cfg.RunID}}
	finish := func(err error) (Summary, error) {
		p.fillQuarantine(ctx, c)
		p.fillObjective(ctx, c)
		sum := c.snapshot()
		sum.DurationMS = p.cfg.Clock.Now().Sub(start).Milliseconds()
		return sum, err
	}
	if err := ctx.Err(); err != nil {
		return finish(err)
	}
	if err := p.checkEpoch(ctx); err != nil {
		return finish(err)
	}
	c.KeyMismatch = p.checkKeys(ctx)
	var err error
	if p.suppressionEmail, err = ledger.SuppressionAny(ctx, p.db, notice.ChannelEmail); err != nil {
		return finish(err)
	}
	if err := p.checkPreviousKeys(ctx); err != nil {
		return finish(err)
	}
	if err := p.loadSummary(ctx); err != nil {
		return finish(err)
	}
	if err := p.guardMaxMint(ctx, c); err != nil {
		return finish(err)
	}
	if err := p.expireRetries(ctx, c); err != nil {
		return finish(err)
	}
	// The sms stage runs beside the email stage (sweep.go): neither waits
	// for the other; an error of either stops both.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	sms := p.startSweeps(ctx, stop, c)
	if sms == nil {
		p.sweptDone() // no sms stage: the email notices after sms read once more at once
	}
	ps, err := p.sendDue(ctx, c, sms.queue())
	if err != nil {
		stop(err)
	}
	if smsErr := sms.wait(); err == nil {
		err = smsErr
	}
	if err != nil {
		return finish(err)
	}
	if err := p.recordMissed(ctx, c); err != nil {
		return finish(err)
	}
	if ps.stopped || p.sawQuiet {
		if err := p.tallyDeferred(ctx, ps, c); err != nil {
			return finish(err)
		}
	}
	return finish(p.countSuppressed(ctx, ps, c))
}

// checkEpoch records where the pass found the ledger's database, in one
// statement, and refuses the pass (ledger.ErrRestored, nothing claimed)
// when it is on another timeline than the last pass found it: restored or
// failed over, it may have lost claims whose notices went out. A server
// that does not tell its timeline is not checked; the pass says so. A new
// timeline that a lossless switchover explains (ledger.Switchover) is
// logged and the pass goes on.
func (p *Pass) checkEpoch(ctx context.Context) error {
	here, err := ledger.CheckPass(ctx, p.db, p.cfg.RunID, p.start)
	var re *ledger.RestoredError
	switch {
	case errors.Is(err, ledger.ErrNoTimeline):
		p.log.Warn().Err(err).Msg("the ledger's server does not tell its WAL timeline: this pass cannot notice a restore or a failover")
		return nil
	case errors.As(err, &re):
		p.log.Error().Int64("timeline", here.Timeline).Str("lsn", here.LSN).Str("why", re.Why).
			Str("last_run_id", re.Last.RunID).Time("last_recorded_at", re.Last.RecordedAt).Str("last_kind", re.Last.Kind).
			Msg("refusing to claim: the ledger's database was restored or failed over since the last pass it knows of; run `scan recover`")
		return err
	case err != nil:
		return err
	}
	if sw := here.Switchover; sw != nil {
		p.log.Info().Int64("from_timeline", sw.From).Int64("timeline", sw.To).Str("switch_lsn", sw.At).
			Str("last_run_id", sw.LastRun).Int("sync_standbys", sw.Standby).
			Msg("the ledger's database switched over to the synchronous standby that acknowledged every claim of the last pass: going on")
		return nil
	}
	p.log.Debug().Int64("timeline", here.Timeline).Str("lsn", here.LSN).Msg("ledger epoch recorded")
	return nil
}

// guardMaxMint refuses (ErrMaxMint, nothing claimed) a pass whose dry run
// would mint more new notice keys than --max-mint allows.
func (p *Pass) guardMaxMint(ctx context.Context, c *counters) error {
	if p.maxMint < 0 {
		return nil
	}
	dry, err := p.DryRun(ctx)
	if err != nil {
		return err
	}
	if dry.newKeys() <= p.maxMint {
		return nil
	}
	c.Invalid = dry.Invalid
	p.log.Error().Int("would_mint", dry.WouldMint).Int("would_mint_sms", dry.smsMint).Int("would_email_after_sms", dry.WouldEmailAfterSMS).Int("max_mint", p.maxMint).
		Msg("refusing to send: this pass would mint more new notice keys than --max-mint allows (a changed secret or a bad data load?); nothing was claimed")
	return fmt.Errorf("%w: would mint %d new keys, limit %d", ErrMaxMint, dry.newKeys(), p.maxMint)
}

// expireRetries marks missed the retry rows whose window has closed.
func (p *Pass) expireRetries(ctx context.Context, c *counters) error {
	expired, err := ledger.ExpireRetries(ctx, p.db, p.cfg.Now)
	if err != nil {
		return err
	}
	c.add(func(x *Summary) { x.Missed += int(expired) })
	return nil
}

// sendDue claims the due notices, sends them through the email channel's
// stage and records their outcomes, and returns what the producer leaves
// to the end of the pass. What it fails for good goes to next (the sms
// stage's). Its error is the pass's (errorCause).
func (p *Pass) sendDue(ctx context.Context, c *counters, next *handoff) (*passState, error) {
	st, err := p.startStage(ctx, p.channelOf(notice.ChannelEmail), c, next)
	if err != nil {
		return nil, err
	}
	ps := &passState{handled: map[string]int{}, reclaimed: map[string]int{}, groups: map[string]*groupTally{}}
	if err := st.finish(p.produce(st.ctx, st, c, ps)); err != nil {
		p.log.Error().Err(err).Msg("pass aborted; it is safe to run again")
		return nil, err
	}
	return ps, nil
}

// countSuppressed counts the due notices of every window group that other
// runs handled, and with them the pass's eligible notices. A group is
// counted again at the end (one walk of its window and of the ledger's
// rows there: the month this pass filled, when it is a first pass) only
// when another run may have written there meanwhile (settledAtStart);
// else its count at the start, less the rows this pass re-claimed, is
// the count.
func (p *Pass) countSuppressed(ctx context.Context, ps *passState, c *counters) error {
	suppressed, retry := 0, c.snapshot().Retry
	var err error
	for _, group := range p.sels[notice.ChannelEmail] {
		for _, sel := range group {
			key := sel.Key()
			n, ok := ps.handled[key]
			if !ok && ps.settledAtStart(key, retry, p.kinds[sel.Kind].HasSMS()) {
				n, ok = ps.groups[key].due.Handled, true
			}
			if ok {
				// Counted at the start, before this pass re-claimed any of
				// the group's retry rows.
				n -= ps.reclaimed[key]
			} else if n, err = p.countHandled(ctx, sel, ps.tally(key)); err != nil {
				return err
			}
			suppressed += n
		}
	}
	c.add(func(x *Summary) {
		x.Suppressed = suppressed
		x.Eligible = x.Minted + x.Retried + x.Suppressed + x.Deferred + x.SuppressedAddress + x.Witnessed
	})
	return nil
}

// countHandled counts sel's due notices that other runs handled: over
// the window's earliest period the group's stream read (g.from), or, for
// a group the email stage kept no tally of, read again first.
func (p *Pass) countHandled(ctx context.Context, sel selection, g *groupTally) (int, error) {
	if g == nil {
		return p.src.Handled(ctx, p.db, sel, p.cfg.RunID)
	}
	return p.src.HandledFrom(ctx, p.db, sel, p.cfg.RunID, g.from)
}

func (p *Pass) fillQuarantine(ctx context.Context, c *counters) {
	// By now every outcome of this pass is recorded, so its own claims
	// still without one (ambiguous, or not recordable) are quarantine like
	// any earlier run's, and may be the oldest.
	qctx, cancel := context.WithoutCancel(ctx), func() {}
	if ctx.Err() != nil { // stopped: the count must not hold the exit
		qctx, cancel = context.WithTimeout(qctx, ShutdownQuarantineTimeout)
	}
	defer cancel()
	q, err := ledger.QuarantineSize(qctx, p.db, "")
	if err != nil {
		p.log.Warn().Err(err).Msg("could not read the quarantine size")
		return
	}
	c.add(func(x *Summary) {
		x.Quarantine = q.Count
		x.QuarantineSince = q.Oldest
		x.WindowLength = p.cfg.Policy.LongestWindow()
	})
	if r, err := ledger.RetryOldest(qctx, p.db); err != nil {
		p.log.Warn().Err(err).Msg("could not read the oldest retry row")
	} else {
		c.add(func(x *Summary) { x.RetryOldest = r })
	}
	if n, err := ledger.CountInvalidAddress(qctx, p.db, p.cfg.Now); err != nil {
		p.log.Warn().Err(err).Msg("could not count the invalid_address rows")
	} else {
		c.add(func(x *Summary) { x.InvalidAddressWaiting = n })
	}
	if q.Count > 0 {
		p.log.Warn().Int("quarantine", q.Count).Time("quarantine_since", *q.Oldest).
			Msg("claims without a recorded outcome are waiting in quarantine: settle them with `scan reconcile` or `scan resolve`")
	}
}

// fillObjective counts the delivery objective from the ledger
// (ledger.Objective: one statement over the window_closes_at index) for
// the metrics the pass pushes. A stopped pass skips it, and a failed count
// is logged and left out of the push: the objective is never a reason for
// a pass to fail.
func (p *Pass) fillObjective(ctx context.Context, c *counters) {
	if ctx.Err() != nil {
		return
	}
	confirms := p.cfg.Policy.Provider != string(provider.None)
	o, err := ledger.Objective(ctx, p.db, p.cfg.Now, confirms, nil)
	if err != nil {
		p.log.Warn().Err(err).Msg("could not count the delivery objective; its metrics are left out of this push")
		return
	}
	c.add(func(x *Summary) { x.Objective, x.EmailConfirms = o, confirms })
}

// checkKeys re-derives the keys of recent ledger rows (those of the
// current windows, else the most recently claimed) and reports whether
// any differ: the secret changed. The business-tuple index still
// suppresses every notice already in the ledger, so nothing is re-sent.
func (p *Pass) checkKeys(ctx context.Context) bool {
	// Subscriptions renewing between now and the furthest window's opening.
	hi := subscription.Furthest(p.sels[notice.ChannelEmail], p.cfg.Now)
	rows, err := p.src.SampleKeys(ctx, p.db, p.cfg.Now, hi, keyCheckSample)
	if err == nil && len(rows) == 0 {
		rows, err = ledger.Recent(ctx, p.db, keyCheckSample)
	}
	if err != nil {
		p.log.Warn().Err(err).Msg("could not check the ledger's keys")
		return false
	}
	bad := 0
	for _, r := range rows {
		if p.keyer.Key(notice.Tuple{SubscriptionID: r.SubscriptionID, PeriodStart: r.PeriodStart, Kind: r.Kind, Revision: r.Revision}) != r.Key {
			bad++
		}
	}
	if bad > 0 {
		p.log.Error().Int("mismatched", bad).Int("checked", len(rows)).
			Msg("NOTICE_KEY_SECRET does not derive the keys stored in the ledger: the secret was changed or rotated. " +
				"Notices already in the ledger stay suppressed by the business-tuple index and are not sent again")
	}
	return bad > 0
}

// lookPast is how many rows (in batches) a stream may skip, because their
// domains' candidate queues are full, before it waits for room: far
// enough to reach the domains behind a slow domain's backlog, short
// enough that re-reading from the first skipped row stays cheap.
const lookPast = 10

// stream is one sequence of rows the producer reads: a kind's retry rows
// (keyset on the notice key) or one window group's open notices (keyset on
// the subscription id).
type stream struct {
	sel    selection
	retry  bool
	from   *time.Time // the window's earliest period (OpenFrom), for OpenPage
	cursor *string    // read after this; nil from the start
	done   bool
	// When a row is skipped because its domain's queue is full, rescanFrom
	// is the cursor just before the first such row, and skipped the
	// domains whose rows were skipped. At the end of the window (or after
	// lookPast batches of skipped rows) the stream waits until one of
	// those domains has room, then reads again from rescanFrom.
	rescan     bool
	rescanFrom *string
	skipped    map[string]bool
	nSkipped   int
	waiting    bool
	// afterSMS: the email notices of a kind with channels [sms, email]
	// whose sms notice failed (handback.go); awaiting: read once,
	// waiting for the sms stage's first sweep; reread: read again after
	// it; swept: that sweep's end.
	afterSMS, awaiting, reread, fromRead bool
	swept                                <-chan struct{}
}

// rewindIfRoom rewinds a waiting stream to rescanFrom, to read again,
// once one of the domains whose rows it skipped has room in the planner.
func (st *stream) rewindIfRoom(pl *planner) {
	if st.done || !st.waiting || st.rewindAfterSweep() {
		return
	}
	for d := range st.skipped {
		if pl.RoomFor(d) {
			st.cursor, st.rescan, st.rescanFrom, st.nSkipped, st.waiting = st.rescanFrom, false, nil, 0, false
			clear(st.skipped)
			return
		}
	}
}

// readable reports whether st has rows to read now: it is neither done nor
// waiting for room (rewindIfRoom ends the wait).
func (st *stream) readable() bool { return !st.done && !st.waiting }

// passState is what the producer shares with the end of the pass.
type passState struct {
	streams []*stream
	// handled: per window group with nothing open at the start (the usual
	// nightly re-run), its due notices owned by other runs, counted then.
	handled map[string]int
	// reclaimed: per window group, retry rows this pass re-claimed.
	reclaimed map[string]int
	// stopped: the time budget ended the pass before every stream was
	// read and claimed.
	stopped bool
	// groups: per window group with open notices at the start, what it
	// held then and what this pass read and wrote there since
	// (settledAtStart). nil in the sms stage's passState.
	groups map[string]*groupTally
}

// groupTally is what the email stage knows of one window group that had
// open notices at the start: its counts then, and, since, the rows its
// open stream read and the ledger rows this pass wrote for them.
type groupTally struct {
	due  subscription.DueCount
	from *time.Time // the window's earliest period, as the stream reads it
	// read: the rows the group's stream read, each once unless reread.
	read int
	// reread: the stream read some rows again (a rescan past a full
	// domain): read counts them twice.
	reread bool
	// ours: the ledger rows this pass inserted for the group's notices
	// (claimed, witnessed, suppressed or waiting as invalid_address).
	ours int
}

// tally is the groupTally of the group key, nil when ps keeps none (the
// sms stage's, or a group with nothing open at the start).
func (ps *passState) tally(key string) *groupTally {
	if ps == nil || ps.groups == nil {
		return nil
	}
	return ps.groups[key]
}

// settledAtStart reports whether the count of the group key's due
// notices that other runs handled is still its count at the start, less
// the rows this pass re-claimed, so that the end of the pass need not
// count it again. It is when no other run can have written a ledger row
// of the group's notices meanwhile, as this pass can tell without a
// walk of the window:
//   - the stream read every row that was open at the start, each once
//     (read == open, no rescan): no other run took one before it was
//     read;
//   - this pass inserted the row of every row it read (ours == read): no
//     other run took one after it was read (a lost claim), and none was
//     left open to be taken (the time budget, the quiet hours, an invalid
//     row with no ledger row);
//   - no row of this pass is waiting in retry (retry == 0), where another
//     run could re-claim it, and no row was waiting as invalid_address at
//     the start, where another run could re-claim or fail it and turn it
//     handled;
//   - the kind has no sms channel, whose stage writes beside this one.
//
// Like the count of a group with nothing open at the start, it takes the
// source relation's rows as they were at the start.
func (ps *passState) settledAtStart(key string, retry int, sms bool) bool {
	g := ps.tally(key)
	return g != nil && !ps.stopped && !sms && retry == 0 && !g.reread &&
		g.due.Waiting == 0 && g.read == g.due.Open && g.ours == g.read
}

// produce reads the due notices of every kind (its retry rows, then each
// window group's open notices) into the planner's per-domain queues, and
// claims from them just in time: each claim is one set-based statement of
// what the domains' buckets can send over the claim horizon, handed to
// the dispatcher as soon as it commits. A group with nothing open (the
// usual nightly re-run) is settled by one count. It returns when every
// stream is read and claimed, or when the time budget ends (ps.stopped).
func (p *Pass) produce(ctx context.Context, st *stage, c *counters, ps *passState) error {
	if err := p.openStreams(ctx, ps); err != nil {
		return err
	}
	inv := &invalidLog{seen: map[string]bool{}, log: p.log}
	fl, pl := st.fl, st.plan
	var deadline <-chan time.Time
	if p.cfg.MaxDuration > 0 {
		t := p.cfg.Clock.NewTimer(p.cfg.MaxDuration - p.cfg.Clock.Now().Sub(p.start))
		defer t.Stop()
		deadline = t.C()
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-deadline:
			ps.stopped = true
			if n := len(pl.Drain()); n > 0 || !allDone(ps.streams) {
				p.log.Warn().Dur("max_duration", p.cfg.MaxDuration).Int("held", n).
					Msg("the pass's time budget ended: no more claims; what is claimed is sent and recorded, the rest is left to the next pass (deferred)")
			}
			return nil
		default:
		}
		progressed := false
		if picked := pl.Pick(p.cfg.Clock.Now()); len(picked) > 0 {
			if err := p.claimPicked(ctx, st, c, ps, picked); err != nil {
				return err
			}
			progressed = true
		}
		if !pl.Full() {
			for _, st := range ps.streams {
				st.rewindIfRoom(pl)
				if !st.readable() {
					continue
				}
				if err := p.readInto(ctx, st, pl, inv, c, ps); err != nil {
					return err
				}
				progressed = true
				break
			}
		}
		if progressed {
			continue
		}
		if pl.Empty() && allDone(ps.streams) {
			return nil
		}
		select {
		case <-fl.Wake():
		case <-sweptWake(ps.streams, pl):
		case <-deadline:
			deadline = closedTime
		case <-ctx.Done():
		}
	}
}

// streams are the producer's streams, each from the start: per kind of
// the email stage its retry rows, then each window group's open notices;
// then the email notices after sms (handedStreams).
func (p *Pass) streams() []*stream {
	var out []*stream
	for _, group := range p.sels[notice.ChannelEmail] {
		out = append(out, &stream{sel: group[0], retry: true, skipped: map[string]bool{}})
		for _, sel := range group {
			out = append(out, &stream{sel: sel, skipped: map[string]bool{}})
		}
	}
	return append(out, p.handedStreams()...)
}

// openStreams adds to ps the streams the producer reads, less the window
// groups with nothing open at the start (the usual nightly re-run): each
// of those is settled by its count of the notices other runs handled.
func (p *Pass) openStreams(ctx context.Context, ps *passState) error {
	for _, st := range p.streams() {
		if !st.retry && !st.afterSMS {
			from, err := p.src.OpenFrom(ctx, p.db, st.sel)
			if err != nil {
				return err
			}
			due, err := p.src.Due(ctx, p.db, st.sel, p.cfg.RunID, from)
			if err != nil {
				return err
			}
			if due.Open == 0 {
				ps.handled[st.sel.Key()] = due.Handled
				continue
			}
			st.from = from
			ps.groups[st.sel.Key()] = &groupTally{due: due, from: from}
		}
		ps.streams = append(ps.streams, st)
	}
	return nil
}

// closedTime is a channel that is always ready: a deadline seen while
// waiting is handled at the top of the loop.
var closedTime = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

func allDone(streams []*stream) bool {
	for _, st := range streams {
		if !st.done {
			return false
		}
	}
	return true
}

// page is one page of a stream, read and validated.
type page struct {
	cands []candidate
	// skipped are the valid rows that admit refused (not derived), each
	// with the cursor just before it.
	skipped []skippedRow
	last    *string // the cursor after the page
	end     bool    // the page ended the window
	// quiet counts the valid rows the quiet hours defer (content.Defers).
	quiet int
	// bad are the email claims with a malformed address and no other
	// channel, to record as retry rows with reason invalid_address.
	bad []ledger.Claim
	// cancelled are the keys of the retry rows whose subscription is no
	// longer active (subscription.RetryPage's), to end as cancelled.
	cancelled []string
	// read: the rows the page's query returned.
	read int
}

type skippedRow struct {
	domain string
	before *string
}

// readPage returns st's next page after after: its valid rows as
// candidates, invalid rows noted in inv and counted in c. A valid row
// whose domain admit refuses (admit nil takes all) is returned in
// skipped, without deriving its key. It writes nothing: the pass, the
// count of what it deferred and the dry run read the same pages. The
// candidates go into buf's array (nil: a new one).
func (p *Pass) readPage(ctx context.Context, db sqlx.QueryerContext, st *stream, after *string, admit func(domain string) bool, inv *invalidLog, c *counters, buf []candidate) (pg page, err error) {
	now := p.cfg.Now
	kind := st.sel.Kind
	var rows []subscription.Row
	var read int // rows the page's query returned: fewer than a batch ends the stream
	var last *string
	if st.retry {
		var rp subscription.RetryPage
		rp, err = p.src.ListRetry(ctx, db, kind, st.sel.Anchor, now, deref(after), p.cfg.BatchSize)
		rows, read, last, pg.cancelled = rp.Rows, rp.N, &rp.Last, rp.Cancelled
	} else {
		rows, err = p.listStream(ctx, db, st, after)
		read = len(rows)
	}
	if err != nil {
		return pg, err
	}
	pg.last = after
	pg.cands = slices.Grow(buf[:0], len(rows)) // a candidate is large: grown, it is copied again
	for _, r := range rows {
		prev := pg.last
		if st.retry {
			pg.last = r.LedgerKey
		} else {
			id := r.ID
			pg.last = &id
		}
		v := p.classify(p.content, r, ask{sel: st.sel, retry: st.retry, channel: notice.ChannelEmail})
		switch v.is {
		case invalid:
			if inv.note(r.ID, kind, v.reason) {
				c.add(func(x *Summary) { x.Invalid++ })
			}
			if strings.HasPrefix(v.reason, "email: ") && !p.kinds[kind].HasSMS() && v.dn.claim.SubscriptionID != "" {
				p.derive(&v.dn)
				pg.bad = append(pg.bad, v.dn.claim) // no channel left: waits as invalid_address
			}
		case deferred:
			pg.quiet++ // a later pass sends it, outside the quiet hours
		case dueNow:
			if d := send.DomainOf(v.dn.n); admit != nil && !admit(d) {
				pg.skipped = append(pg.skipped, skippedRow{domain: d, before: prev})
				continue
			}
			p.derive(&v.dn)
			pg.cands = append(pg.cands, candidate{due: v.dn, reclaim: st.retry, sel: v.sel})
		}
	}
	if last != nil && *last != "" {
		pg.last = last // past the retry rows left out of the page
	}
	pg.end, pg.read = read < p.cfg.BatchSize, read
	return pg, nil
}

// cancelRetries ends as cancelled the retry rows of keys, whose
// subscriptions are no longer active: a recorded no-op, never sent.
func (p *Pass) cancelRetries(ctx context.Context, keys []string, c *counters) error {
	n, err := ledger.CancelRetries(ctx, p.db, keys, p.cfg.Now)
	if err != nil {
		return err
	}
	if n > 0 {
		c.add(func(x *Summary) { x.Cancelled += int(n) })
		p.log.Info().Int64("cancelled", n).Msg("retry rows whose subscription is no longer active ended as cancelled; nothing sent")
	}
	return nil
}

// readInto reads st's next page into the planner, skipping (and noting
// where) the rows whose domain's queue is full.
func (p *Pass) readInto(ctx context.Context, st *stream, pl *planner, inv *invalidLog, c *counters, ps *passState) error {
	pending := map[string]int{}
	admit := func(domain string) bool {
		if !pl.Admits(domain, pending[domain]) {
			return false
		}
		pending[domain]++
		return true
	}
	pg, err := p.readPage(ctx, p.db, st, st.cursor, admit, inv, c, p.pageCands)
	if err != nil {
		return err
	}
	defer func() { // the planner copied them: the buffer again, holding none
		clear(pg.cands)
		p.pageCands = pg.cands[:0]
	}()
	if err := p.cancelRetries(ctx, pg.cancelled, c); err != nil {
		return err
	}
	recorded, err := p.recordInvalidN(ctx, c, pg.bad)
	if err != nil {
		return err
	}
	if g := ps.tally(st.sel.Key()); g != nil && !st.retry && !st.afterSMS {
		g.read, g.ours = g.read+pg.read, g.ours+recorded
		g.reread = g.reread || st.rescan || len(pg.skipped) > 0
	}
	for _, cd := range pg.cands {
		pl.Offer(cd)
	}
	if pg.quiet > 0 {
		p.sawQuiet = true // counted at the end: a rescan re-reads rows
	}
	for _, sk := range pg.skipped {
		if !st.rescan {
			st.rescan, st.rescanFrom = true, sk.before
		}
		st.skipped[sk.domain] = true
		st.nSkipped++
	}
	st.cursor = pg.last
	switch {
	case pg.end && !st.rescan:
		st.done = true
	case pg.end, st.nSkipped >= lookPast*p.cfg.BatchSize:
		st.waiting = true
	}
	st.awaitSweep()
	return nil
}

// claimPicked claims the planner's pick for st's channel, new notices in
// one statement and retry rows in another, and hands what it won to the
// stage: one claim path for every channel.
func (p *Pass) claimPicked(ctx context.Context, st *stage, c *counters, ps *passState, picked []candidate) error {
	// The channel's suppression list is probed in the claim statements
	// (suppress.go); the email list only when it had entries at the start.
	opt := ledger.ClaimOptions{State: ledger.Claimed, Now: p.cfg.Now, RunID: p.cfg.RunID, RedirectTo: p.cfg.RedirectTo, Channel: st.ch.name,
		Suppression: st.ch.name != notice.ChannelEmail || p.suppressionEmail, KeyID: p.keys.Current.KeyID(), Summary: p.summary}
	claims := slices.Grow(st.claims[:0], len(picked))
	defer func() { // the stage's buffer again, holding nothing of this batch
		clear(claims)
		st.claims = claims[:0]
	}()
	var retryKeys []string
	byKey := make(map[string]candidate, len(picked))
	for _, cd := range picked {
		byKey[cd.claim.Key] = cd
		if cd.reclaim {
			retryKeys = append(retryKeys, cd.claim.Key)
		} else {
			claims = append(claims, cd.claim)
		}
	}
	// Passes running at once may pick overlapping notices in different
	// turns; inserted in one total order (the business tuple's, as the
	// source pages are), their waits on each other's rows can never form
	// a cycle: no deadlock.
	slices.SortFunc(claims, func(a, b ledger.Claim) int {
		return cmp.Or(strings.Compare(a.SubscriptionID, b.SubscriptionID), strings.Compare(a.Kind, b.Kind),
			a.PeriodStart.Compare(b.PeriodStart), cmp.Compare(a.Revision, b.Revision))
	})
	slices.Sort(retryKeys)
	var won []ledger.Won
	for _, step := range []func() ([]ledger.Won, error){
		func() ([]ledger.Won, error) { return p.reclaimPicked(ctx, c, opt, ps, st.next, retryKeys, byKey) },
		func() ([]ledger.Won, error) { return p.insertPicked(ctx, c, opt, ps, st.next, claims, byKey) },
	} {
		w, err := step()
		if err != nil {
			return err
		}
		if st.ch.name == notice.ChannelSMS {
			c.add(func(x *Summary) { x.SMS += len(w) }) // part of Minted and Retried
		}
		won = append(won, w...)
	}
	if h := p.cfg.Hooks.AfterClaimCommit; h != nil && len(won) > 0 {
		h(len(won))
	}
	attempts := 0
	for _, w := range won {
		attempts += w.Attempt
	}
	c.add(func(x *Summary) { x.Attempts += attempts })
	p.noteFallbacks(c, won, byKey)
	return p.submit(ctx, st, won, byKey)
}

// reclaimPicked re-claims the picked retry rows (keys, sorted) by
// compare-and-set, less those the suppression list now holds.
func (p *Pass) reclaimPicked(ctx context.Context, c *counters, opt ledger.ClaimOptions, ps *passState, next *handoff, keys []string, byKey map[string]candidate) ([]ledger.Won, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	digests, previous := retryDigests(opt, byKey, keys)
	w, err := p.claim(ctx, func(ctx context.Context) ([]ledger.Won, error) {
		return ledger.ReclaimUnlessSuppressed(ctx, p.db, opt, keys, digests, previous)
	})
	if err != nil {
		return nil, err
	}
	w, _ = p.takeSuppressed(c, opt.Channel, w, byKey, next)
	c.add(func(x *Summary) { x.Retried += len(w) })
	for _, x := range w {
		ps.reclaimed[byKey[x.Key].sel]++
	}
	return w, nil
}

// insertPicked claims the picked new notices (claims, sorted) in one
// statement, autocommitted: the claim is durable before any notice of it
// leaves the process. It returns those to send: not suppressed, not
// witnessed sent already.
func (p *Pass) insertPicked(ctx context.Context, c *counters, opt ledger.ClaimOptions, ps *passState, next *handoff, claims []ledger.Claim, byKey map[string]candidate) ([]ledger.Won, error) {
	if len(claims) == 0 {
		return nil, nil
	}
	// The email notices only: the sms stage mints beside this one
	// (its fallbacks for this pass's failures were not foreseen).
	minted := c.snapshot().Minted - int(p.sweptMinted.Load())
	if opt.Channel == notice.ChannelEmail && p.maxMint >= 0 && minted+len(claims) > p.maxMint {
		return nil, fmt.Errorf("%w: new subscriptions appeared during the pass; stopped at %d minted", ErrMaxMint, minted)
	}
	if h := p.cfg.Hooks.BeforeClaim; h != nil {
		h(len(claims))
	}
	w, err := p.claim(ctx, func(ctx context.Context) ([]ledger.Won, error) {
		return ledger.Insert(ctx, p.db, opt, claims)
	})
	if err != nil {
		return nil, err
	}
	if opt.Channel == notice.ChannelEmail {
		for _, x := range w { // every row inserted: sent, witnessed or suppressed
			if g := ps.tally(byKey[x.Key].sel); g != nil {
				g.ours++
			}
		}
	}
	w, listed := p.takeSuppressed(c, opt.Channel, w, byKey, next)
	w, witnessed := splitWitnessed(w)
	if opt.Channel == notice.ChannelSMS {
		p.sweptMinted.Add(int64(len(w)))
	}
	c.add(func(x *Summary) { x.Minted, x.Witnessed = x.Minted+len(w), x.Witnessed+witnessed })
	p.log.Info().Str("channel", opt.Channel).Int("candidates", len(claims)).Int("claimed", len(w)).
		Int("conflicts", len(claims)-len(w)-witnessed-listed).Int("witnessed", witnessed).Msg("batch claimed")
	if witnessed > 0 {
		p.log.Warn().Int("witnessed", witnessed).
			Msg("notices the ledger did not have but the provider's events show sent (a restore or failover lost their claims): recorded sent from that evidence, not sent again")
	}
	return w, nil
}

// splitWitnessed returns the claims of won to send, and how many the
// second witness settled instead (ledger.Won.Witnessed: recorded sent
// from the provider's evidence; never sent).
func splitWitnessed(won []ledger.Won) ([]ledger.Won, int) {
	out := won[:0:0]
	for _, w := range won {
		if !w.Witnessed {
			out = append(out, w)
		}
	}
	return out, len(won) - len(out)
}

// noteFallbacks counts and logs, by subscription id, the claimed notices
// that go out in the policy's default locale or time zone because their
// row's was malformed or unknown. Counted once claimed, so each notice
// counts once however often its row was read.
func (p *Pass) noteFallbacks(c *counters, won []ledger.Won, byKey map[string]candidate) {
	n := 0
	for _, w := range won {
		cd := byKey[w.Key]
		if len(cd.fallbacks) == 0 {
			continue
		}
		n++
		p.log.Warn().Str("subscription_id", subscription.LogID(cd.claim.SubscriptionID)).Str("kind", cd.claim.Kind).
			Strs("fallback", cd.fallbacks).Str("locale", cd.n.Locale).Str("time_zone", cd.n.TimeZone.String()).
			Msg("malformed or unknown locale or time_zone: the notice goes out with the policy's default")
	}
	if n > 0 {
		c.add(func(x *Summary) { x.Fallback += n })
	}
}

// claim runs one claim statement unless the pass is already cancelled.
// Once sent, the statement is not cancelled with the pass: it commits on
// its own, and a claim that committed while its answer was dropped would
// stay in quarantine although nothing was sent. Its rows go to submit,
// which releases them as retry on shutdown. recordTimeout bounds it.
func (p *Pass) claim(ctx context.Context, stmt func(context.Context) ([]ledger.Won, error)) ([]ledger.Won, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	return stmt(cctx)
}

// submit hands the claimed notices won to the stage (stage.submit).
func (p *Pass) submit(ctx context.Context, st *stage, won []ledger.Won, byKey map[string]candidate) error {
	at := p.cfg.Clock.Now()
	for _, w := range won {
		cd := byKey[w.Key]
		n := cd.notice()
		n.ClaimedAt, n.Attempt = at, w.Attempt
		if w.CancelToken != "" {
			n.CancelToken = w.CancelToken
		}
		if err := st.submit(ctx, n); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// tallyDeferred counts the due notices the pass left to the next one:
// those the quiet hours held, and, after a pass that its time budget
// stopped, those it did not reach, by recipient domain.
func (p *Pass) tallyDeferred(ctx context.Context, ps *passState, c *counters) error {
	byDomain, quiet, err := p.countDeferred(ctx, ps)
	if err != nil {
		return err
	}
	if !ps.stopped {
		byDomain = map[string]int{} // a completed pass reached every row
	}
	n := 0
	for _, k := range byDomain {
		n += k
	}
	c.add(func(x *Summary) { // added to the sms stage's own (sweep.go)
		x.Deferred, x.DeferredByDomain, x.DeferredQuietHours = x.Deferred+n+quiet, byDomain, x.DeferredQuietHours+quiet
	})
	if n > 0 {
		p.log.Warn().Int("deferred", n).
			Msg("notices left unclaimed when the time budget ended: the next pass takes them while their window is open")
	}
	if quiet > 0 {
		p.log.Info().Int("deferred", quiet).Str("reason", "quiet_hours").
			Msg("notices due inside the recipient's quiet hours left to a later pass that runs outside them before their window closes")
	}
	return nil
}

// countDeferred counts the valid due notices that are still neither
// claimed nor handled elsewhere: by recipient domain those a pass that
// its time budget stopped left to the next pass, and apart those the
// quiet hours hold (quiet).
func (p *Pass) countDeferred(ctx context.Context, ps *passState) (byDomain map[string]int, quiet int, _ error) {
	byDomain = map[string]int{}
	inv := &invalidLog{seen: map[string]bool{}, log: zerolog.Nop()}
	for _, st := range ps.streams {
		err := p.walkStream(ctx, p.db, st, admitNone, inv, &counters{}, func(pg page) error {
			for _, sk := range pg.skipped {
				byDomain[sk.domain]++
			}
			quiet += pg.quiet
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return byDomain, quiet, nil
}

// admitNone admits no row: readPage then returns every valid row that is
// not quiet in skipped, with its domain, without deriving its key.
func admitNone(string) bool { return false }

// walkStream reads st's rows from the start (in a stream of its own: st
// stays where it is) as the producer reads them, admitting the rows admit
// admits, and hands fn each page: the count of what a pass defers, the
// dry run and the shadow pass.
func (p *Pass) walkStream(ctx context.Context, db sqlx.QueryerContext, st *stream, admit func(string) bool, inv *invalidLog, c *counters, fn func(page) error) error {
	rd := &stream{sel: st.sel, retry: st.retry, from: st.from, afterSMS: st.afterSMS, fromRead: st.fromRead}
	return subscription.EachPage(func(after *string) (*string, bool, error) {
		pg, err := p.readPage(ctx, db, rd, after, admit, inv, c, nil)
		if err == nil {
			err = fn(pg)
		}
		return pg.last, pg.end, err
	})
}

// recordMissed records as missed, on each channel a kind goes by first,
// every notice whose window closed with no ledger row of that channel
// while the charge is still ahead (keyed for the channel).
func (p *Pass) recordMissed(ctx context.Context, c *counters) error {
	for _, ch := range []string{notice.ChannelEmail, notice.ChannelSMS} {
		opt := ledger.ClaimOptions{State: ledger.Missed, Now: p.cfg.Now, RunID: p.cfg.RunID, Channel: ch}
		err := p.eachClosed(ctx, p.db, ch, func(claims []ledger.Claim) error {
			won, err := ledger.Insert(ctx, p.db, opt, claims)
			if err != nil {
				return fmt.Errorf("record missed: %w", err)
			}
			c.add(func(x *Summary) { x.Missed += len(won) })
			if len(won) > 0 {
				p.log.Warn().Int("missed", len(won)).Str("channel", ch).Msg("notice windows closed before any pass claimed them; recorded as missed, nothing sent")
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// eachClosed calls fn with each page of the claims, keyed for channel,
// of the rows of the kinds that go by channel first whose window closed
// with no row of that channel.
func (p *Pass) eachClosed(ctx context.Context, db sqlx.QueryerContext, channel string, fn func([]ledger.Claim) error) error {
	for _, group := range p.sels[channel] {
		for _, sel := range group {
			list, err := p.src.ClosedLister(ctx, db, sel, channel == notice.ChannelSMS)
			if err != nil {
				return err
			}
			if err := subscription.EachRowPage(p.cfg.BatchSize, list, func(rows []subscription.Row) error {
				return fn(p.missedClaims(sel, channel, rows))
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// missedClaims are the claims, keyed for channel, that record the
// closed-window rows as missed; a row that cannot make a notice key is
// left out (not counted invalid: classify's missed path).
func (p *Pass) missedClaims(sel selection, channel string, rows []subscription.Row) []ledger.Claim {
	claims := make([]ledger.Claim, 0, len(rows))
	for _, r := range rows {
		if v := p.classify(p.content, r, ask{sel: sel, channel: channel, missed: true}); v.is == closed {
			claims = append(claims, v.dn.claim)
		}
	}
	return claims
}

// DryRun reports what a pass would do now, inside a read-only transaction:
// it writes nothing of any kind.
func (p *Pass) DryRun(ctx context.Context) (DryRunSummary, error) {
	var out DryRunSummary
	tx, err := p.db.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return out, fmt.Errorf("dry run: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only; nothing to keep
	// The pass's timeline check, recording nothing: a pass now would
	// refuse (ledger.ErrRestored), and so does the dry run, with the
	// reason in its summary.
	var re *ledger.RestoredError
	switch _, err := ledger.CheckTimeline(ctx, tx); {
	case errors.As(err, &re):
		out.WouldRefuse = err.Error()
		return out, err
	case errors.Is(err, ledger.ErrNoTimeline):
		p.log.Warn().Err(err).Msg("the ledger's server does not tell its WAL timeline: a pass cannot notice a restore or a failover")
	case err != nil:
		return out, err
	}
	if err := p.dryRunStreams(ctx, tx, &out); err != nil {
		return out, err
	}
	if err := p.eachClosed(ctx, tx, notice.ChannelEmail, func(claims []ledger.Claim) error {
		out.WouldMiss += len(claims)
		return nil
	}); err != nil {
		return out, err
	}
	expiring, err := ledger.CountExpiringRetries(ctx, tx, p.cfg.Now)
	if err != nil {
		return out, err
	}
	out.WouldMiss += expiring
	if err := p.sweepDryRun(ctx, tx, &out); err != nil {
		return out, err
	}
	out.Eligible = out.WouldMint + out.AlreadyClaimed + out.WouldDefer
	return out, nil
}

// dryRunStreams counts into out what the producer's streams (streams)
// hold now, read as the pass reads them: the open notices a pass would
// mint (or the quiet hours defer), the email notices after sms it would
// mail, and the invalid rows of every stream (a retry row included: one
// waiting as invalid_address counts invalid, as in a pass); and, per
// window group, the due notices other runs handled.
func (p *Pass) dryRunStreams(ctx context.Context, tx sqlx.QueryerContext, out *DryRunSummary) error {
	c, inv := &counters{}, &invalidLog{seen: map[string]bool{}, log: p.log}
	for _, st := range p.streams() {
		err := p.walkStream(ctx, tx, st, admitNone, inv, c, func(pg page) error {
			switch {
			case st.afterSMS:
				out.WouldEmailAfterSMS += len(pg.skipped)
			case !st.retry:
				out.WouldMint += len(pg.skipped)
				out.WouldDefer += pg.quiet
			}
			return nil
		})
		if err != nil {
			return err
		}
		if st.retry || st.afterSMS {
			continue
		}
		n, err := p.src.Handled(ctx, tx, st.sel, "")
		if err != nil {
			return err
		}
		out.AlreadyClaimed += n
	}
	out.Invalid = c.Invalid
	return nil
}

// recordInvalid records bad (email claims with a malformed address and no
// other channel) as retry rows with reason invalid_address, so that scan
// undelivered lists them while their window is open and the retry stream
// sends them once the address is fixed. Not claimed: they are in neither
// Minted nor Retry, and InvalidAddress counts the rows new this pass.
func (p *Pass) recordInvalid(ctx context.Context, c *counters, bad []ledger.Claim) error {
	_, err := p.recordInvalidN(ctx, c, bad)
	return err
}

// recordInvalidN is recordInvalid that returns how many rows it recorded.
func (p *Pass) recordInvalidN(ctx context.Context, c *counters, bad []ledger.Claim) (int, error) {
	opt := ledger.ClaimOptions{Now: p.cfg.Now, RunID: p.cfg.RunID, Channel: notice.ChannelEmail}
	keys, err := ledger.RecordInvalidAddress(ctx, p.db, opt, bad)
	if err != nil {
		return 0, err
	}
	if len(keys) > 0 {
		c.add(func(x *Summary) { x.InvalidAddress += len(keys) })
	}
	return len(keys), nil
}
