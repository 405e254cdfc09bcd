package scan

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/example/scan/internal/ledger"
	"github.com/example/scan/internal/notice"
	"github.com/example/scan/internal/policy"
	"github.com/example/scan/internal/send"
)

// keyCheckSample is how many recent ledger rows a pass re-derives to
// notice a changed secret.
const keyCheckSample = 20

// Run performs one pass. It returns the summary and, when the pass did not
// complete, an error: ErrMaxMint (nothing claimed), a *ConfigError, the
// context's error on shutdown, or a database or sender failure. A pass that
// ends in error is safe to run again.
func (s *Scanner) Run(ctx context.Context) (Summary, error) {
	start := s.cfg.Clock()
	now := s.cfg.Now
	c := &counters{Summary: Summary{RunID: s.cfg.RunID}}
	finish := func(err error) (Summary, error) {
		s.fillQuarantine(ctx, c)
		sum := c.snapshot()
		sum.DurationMS = s.cfg.Clock().Sub(start).Milliseconds()
		return sum, err
	}
	if err := ctx.Err(); err != nil {
		return finish(err)
	}
	c.KeyMismatch = s.checkKeys(ctx)

	if s.maxMint >= 0 {
		dry, err := s.DryRun(ctx)
		if err != nil {
			return finish(err)
		}
		if dry.WouldMint > s.maxMint {
			c.Invalid = dry.Invalid
			s.log.Error().Int("would_mint", dry.WouldMint).Int("max_mint", s.maxMint).
				Msg("refusing to send: this pass would mint more new notice keys than --max-mint allows (a changed secret or a bad data load?); nothing was claimed")
			return finish(fmt.Errorf("%w: would mint %d new keys, limit %d", ErrMaxMint, dry.WouldMint, s.maxMint))
		}
	}

	expired, err := ledger.ExpireRetries(ctx, s.db, now)
	if err != nil {
		return finish(err)
	}
	c.add(func(x *Summary) { x.Missed += int(expired) })

	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := s.cfg.Policy
	shards := float64(s.cfg.Shards)
	div := func(b policy.Bucket) send.Bucket {
		return send.Bucket{PerSecond: b.PerSecond / shards, Burst: max(1, int(float64(b.Burst)/shards))}
	}
	limits := send.Limits{Default: div(p.Rate.Default), Global: div(p.Rate.Global), Domains: map[string]send.Bucket{}}
	for d, b := range p.Rate.Domains {
		limits.Domains[d] = div(b)
	}
	d, err := send.NewDispatcher(pctx, send.DispatcherConfig{
		Sender: s.sender, Renderer: s.renderer, Limits: limits,
		// The look-ahead bounds what a crash leaves in quarantine without
		// having sent it: at most the batch being claimed plus MaxQueued
		// notices handed over but not yet sent.
		Concurrency: p.Concurrency, MaxQueued: s.cfg.BatchSize, Retry: s.cfg.Retry, Logger: s.log,
	})
	if err != nil {
		return finish(&ConfigError{"sender", err.Error()})
	}
	rec := &recorder{db: s.db, runID: s.cfg.RunID, clock: s.cfg.Clock, log: s.log, hooks: s.cfg.Hooks, c: c, cancel: cancel, grace: s.cfg.ShutdownGrace}
	recDone := make(chan error, 1)
	go func() {
		// A panic here would kill the process outside run()'s recover (and
		// print unredacted): turn it into the pass's error, stop producing,
		// and keep draining so the dispatcher can finish.
		defer func() {
			if p := recover(); p != nil {
				err := fmt.Errorf("recording outcomes: panic: %v", p)
				cancel(err)
				for range d.Results() {
				}
				recDone <- err
			}
		}()
		recDone <- rec.run(ctx, d.Results())
	}()

	// handled: per window group whose stream was skipped (nothing new),
	// its suppressed count, already known.
	handled := map[string]int{}
	prodErr := s.produce(pctx, d, c, handled)
	d.Close()
	recErr := <-recDone
	if err := errors.Join(prodErr, recErr); err != nil {
		if cause := context.Cause(pctx); cause != nil && !errors.Is(cause, context.Canceled) && recErr == nil {
			err = cause
		}
		s.log.Error().Err(err).Msg("pass aborted; it is safe to run again")
		return finish(err)
	}

	if err := s.recordMissed(ctx, c); err != nil {
		return finish(err)
	}
	suppressed := 0
	for _, group := range s.sels {
		for _, sel := range group {
			n, ok := handled[sel.key()]
			if !ok {
				var err error
				if n, err = s.src.countHandled(ctx, s.db, sel, now, s.cfg.RunID); err != nil {
					return finish(err)
				}
			}
			suppressed += n
		}
	}
	c.add(func(x *Summary) {
		x.Suppressed = suppressed
		x.Eligible = x.Minted + x.Retried + x.Suppressed
	})
	return finish(nil)
}

func (s *Scanner) fillQuarantine(ctx context.Context, c *counters) {
	// By now every outcome of this pass is recorded, so its own claims
	// still without one (ambiguous, or not recordable) are quarantine like
	// any earlier run's, and may be the oldest.
	qctx, cancel := context.WithoutCancel(ctx), func() {}
	if ctx.Err() != nil { // stopped: the count must not hold the exit
		qctx, cancel = context.WithTimeout(qctx, ShutdownQuarantineTimeout)
	}
	defer cancel()
	q, err := ledger.QuarantineSize(qctx, s.db, "")
	if err != nil {
		s.log.Warn().Err(err).Msg("could not read the quarantine size")
		return
	}
	c.add(func(x *Summary) {
		x.Quarantine = q.Count
		x.QuarantineSince = q.Oldest
	})
	if q.Count > 0 {
		s.log.Warn().Int("quarantine", q.Count).Time("quarantine_since", *q.Oldest).
			Msg("claims without a recorded outcome are waiting in quarantine: settle them with `scan reconcile` or `scan resolve`")
	}
}

// checkKeys re-derives the keys of recent ledger rows (those of the
// current windows, else the most recently claimed) and reports whether
// any differ: the secret changed. The business-tuple index still
// suppresses every notice already in the ledger, so nothing is re-sent.
func (s *Scanner) checkKeys(ctx context.Context) bool {
	// Subscriptions renewing between now and the furthest window's opening.
	hi := s.cfg.Now
	for _, group := range s.sels {
		for _, sel := range group {
			if o := s.cfg.Now.Add(sel.open); o.After(hi) {
				hi = o
			}
		}
	}
	rows, err := s.src.sampleKeys(ctx, s.db, s.cfg.Now, hi, keyCheckSample)
	if err == nil && len(rows) == 0 {
		rows, err = ledger.Recent(ctx, s.db, keyCheckSample)
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("could not check the ledger's keys")
		return false
	}
	bad := 0
	for _, r := range rows {
		if s.keyer.Key(notice.Tuple{SubscriptionID: r.SubscriptionID, PeriodStart: r.PeriodStart, Kind: r.Kind, Revision: r.Revision}) != r.Key {
			bad++
		}
	}
	if bad > 0 {
		s.log.Error().Int("mismatched", bad).Int("checked", len(rows)).
			Msg("NOTICE_KEY_SECRET does not derive the keys stored in the ledger: the secret was changed or rotated. " +
				"Notices already in the ledger stay suppressed by the business-tuple index and are not sent again")
	}
	return bad > 0
}

// produce walks every kind: first the retry rows it may re-claim, then each
// window group's open notices, claiming batch by batch and handing each
// committed batch to the dispatcher. A group with nothing open (the usual
// nightly re-run) is settled by one count, recorded in handled.
func (s *Scanner) produce(ctx context.Context, d *send.Dispatcher, c *counters, handled map[string]int) error {
	now := s.cfg.Now
	inv := &invalidLog{seen: map[string]bool{}, log: s.log}
	opt := ledger.ClaimOptions{State: ledger.Claimed, Now: now, RunID: s.cfg.RunID, RedirectTo: s.cfg.RedirectTo}
	for _, group := range s.sels {
		kind := group[0].kind
		k, _ := s.cfg.Policy.Kind(kind)
		after := ""
		for {
			rows, err := s.src.listRetry(ctx, s.db, kind, now, after, s.cfg.BatchSize)
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				break
			}
			after = deref(rows[len(rows)-1].LedgerKey)
			var keys []string
			byKey := map[string]due{}
			for _, r := range rows {
				w := k.WindowFor(deref(r.Jurisdiction))
				if r.RenewsAt == nil || !w.Contains(*r.RenewsAt, now) {
					continue // no longer due under its current row; expires later
				}
				dn, reason := s.validate(r, kind, w)
				if reason != "" {
					if inv.note(r.ID, kind, reason) {
						c.add(func(x *Summary) { x.Invalid++ })
					}
					continue
				}
				keys = append(keys, dn.claim.Key)
				byKey[dn.claim.Key] = dn
			}
			won, err := s.claim(ctx, func(ctx context.Context) ([]ledger.Won, error) {
				return ledger.Reclaim(ctx, s.db, opt, keys)
			})
			if err != nil {
				return err
			}
			c.add(func(x *Summary) { x.Retried += len(won) })
			if err := s.submit(ctx, d, won, byKey); err != nil {
				return err
			}
		}
		for _, sel := range group {
			w := policy.Window{OpenBefore: policy.Duration(sel.open), CloseBefore: policy.Duration(sel.close)}
			// After this kind's retries: rows re-claimed are this run's.
			open, n, err := s.src.countDue(ctx, s.db, sel, now, s.cfg.RunID)
			if err != nil {
				return err
			}
			if open == 0 {
				handled[sel.key()] = n
				continue
			}
			var after *string
			for {
				rows, err := s.src.listOpen(ctx, s.db, sel, now, after, s.cfg.BatchSize)
				if err != nil {
					return err
				}
				if len(rows) == 0 {
					break
				}
				last := rows[len(rows)-1].ID
				after = &last
				claims := make([]ledger.Claim, 0, len(rows))
				byKey := make(map[string]due, len(rows))
				for _, r := range rows {
					dn, reason := s.validate(r, kind, w)
					if reason != "" {
						if inv.note(r.ID, kind, reason) {
							c.add(func(x *Summary) { x.Invalid++ })
						}
						continue
					}
					claims = append(claims, dn.claim)
					byKey[dn.claim.Key] = dn
				}
				if s.maxMint >= 0 && c.snapshot().Minted+len(claims) > s.maxMint {
					return fmt.Errorf("%w: new subscriptions appeared during the pass; stopped at %d minted", ErrMaxMint, c.snapshot().Minted)
				}
				if h := s.cfg.Hooks.BeforeClaim; h != nil {
					h(len(claims))
				}
				// One statement, autocommitted: the claim is durable before
				// any notice of this batch leaves the process.
				won, err := s.claim(ctx, func(ctx context.Context) ([]ledger.Won, error) {
					return ledger.ClaimBatch(ctx, s.db, opt, claims)
				})
				if err != nil {
					return err
				}
				c.add(func(x *Summary) { x.Minted += len(won) })
				s.log.Info().Str("kind", kind).Str("jurisdiction", sel.jurisdiction).Int("rows", len(rows)).
					Int("claimed", len(won)).Int("conflicts", len(claims)-len(won)).Msg("batch claimed")
				if h := s.cfg.Hooks.AfterClaimCommit; h != nil {
					h(len(won))
				}
				if err := s.submit(ctx, d, won, byKey); err != nil {
					return err
				}
				if len(rows) < s.cfg.BatchSize {
					break
				}
			}
		}
	}
	return nil
}

// claim runs one claim statement unless the pass is already cancelled.
// Once sent, the statement is not cancelled with the pass: it commits on
// its own, and a claim that committed while its answer was dropped would
// stay in quarantine although nothing was sent. Its rows go to submit,
// which releases them as retry on shutdown. recordTimeout bounds it.
func (s *Scanner) claim(ctx context.Context, stmt func(context.Context) ([]ledger.Won, error)) ([]ledger.Won, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	return stmt(cctx)
}

func (s *Scanner) submit(ctx context.Context, d *send.Dispatcher, won []ledger.Won, byKey map[string]due) error {
	at := s.cfg.Clock()
	for _, w := range won {
		dn := byKey[w.Key]
		n := dn.n
		n.ClaimedAt = at
		n.CancelToken = w.CancelToken
		if n.CancelToken == "" {
			n.CancelToken = dn.claim.CancelToken
		}
		// Every claimed notice goes to the dispatcher, even on shutdown:
		// once the run is cancelled it answers at once with "not
		// attempted", and the recorder releases the claim as retry instead
		// of leaving a notice that never left the process in quarantine.
		if err := d.Submit(context.WithoutCancel(ctx), n); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// recordMissed records as missed every notice whose window closed with no
// ledger row while the charge is still ahead.
func (s *Scanner) recordMissed(ctx context.Context, c *counters) error {
	opt := ledger.ClaimOptions{State: ledger.Missed, Now: s.cfg.Now, RunID: s.cfg.RunID}
	return s.eachClosed(ctx, s.db, func(claims []ledger.Claim) error {
		won, err := ledger.ClaimBatch(ctx, s.db, opt, claims)
		if err != nil {
			return err
		}
		c.add(func(x *Summary) { x.Missed += len(won) })
		if len(won) > 0 {
			s.log.Warn().Int("missed", len(won)).Msg("notice windows closed before any pass claimed them; recorded as missed, nothing sent")
		}
		return nil
	})
}

func (s *Scanner) eachClosed(ctx context.Context, db sqlx.QueryerContext, fn func([]ledger.Claim) error) error {
	for _, group := range s.sels {
		for _, sel := range group {
			var after *string
			for {
				rows, err := s.src.listClosed(ctx, db, sel, s.cfg.Now, after, s.cfg.BatchSize)
				if err != nil {
					return err
				}
				if len(rows) == 0 {
					break
				}
				last := rows[len(rows)-1].ID
				after = &last
				claims := make([]ledger.Claim, 0, len(rows))
				for _, r := range rows {
					if r.ID == "" || len(r.ID) > notice.MaxSubscriptionIDLen || r.PeriodStart == nil || r.RenewsAt == nil {
						continue
					}
					t := notice.Tuple{SubscriptionID: r.ID, PeriodStart: *r.PeriodStart, Kind: sel.kind, Revision: r.Revision}
					claims = append(claims, ledger.Claim{
						Key: s.keyer.Key(t), SubscriptionID: r.ID, Kind: sel.kind, PeriodStart: *r.PeriodStart,
						Revision: r.Revision, RenewsAt: *r.RenewsAt, WindowClosesAt: r.RenewsAt.Add(-sel.close),
					})
				}
				if err := fn(claims); err != nil {
					return err
				}
				if len(rows) < s.cfg.BatchSize {
					break
				}
			}
		}
	}
	return nil
}

// DryRun reports what a pass would do now, inside a read-only transaction:
// it writes nothing of any kind.
func (s *Scanner) DryRun(ctx context.Context) (DryRunSummary, error) {
	var out DryRunSummary
	tx, err := s.db.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return out, fmt.Errorf("dry run: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only; nothing to keep
	now := s.cfg.Now
	inv := &invalidLog{seen: map[string]bool{}, log: s.log}
	for _, group := range s.sels {
		kind := group[0].kind
		for _, sel := range group {
			w := policy.Window{OpenBefore: policy.Duration(sel.open), CloseBefore: policy.Duration(sel.close)}
			var after *string
			for {
				rows, err := s.src.listOpen(ctx, tx, sel, now, after, s.cfg.BatchSize)
				if err != nil {
					return out, err
				}
				if len(rows) == 0 {
					break
				}
				last := rows[len(rows)-1].ID
				after = &last
				for _, r := range rows {
					if _, reason := s.validate(r, kind, w); reason != "" {
						if inv.note(r.ID, kind, reason) {
							out.Invalid++
						}
						continue
					}
					out.WouldMint++
				}
				if len(rows) < s.cfg.BatchSize {
					break
				}
			}
			n, err := s.src.countHandled(ctx, tx, sel, now, "")
			if err != nil {
				return out, err
			}
			out.AlreadyClaimed += n
		}
	}
	if err := s.eachClosed(ctx, tx, func(claims []ledger.Claim) error {
		out.WouldMiss += len(claims)
		return nil
	}); err != nil {
		return out, err
	}
	expiring, err := ledger.CountExpiringRetries(ctx, tx, now)
	if err != nil {
		return out, err
	}
	out.WouldMiss += expiring
	out.Eligible = out.WouldMint + out.AlreadyClaimed
	return out, nil
}

func isUndefined(err error) bool {
	var pe *pq.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case "42P01", "3F000", "42501": // undefined_table, invalid_schema_name, insufficient_privilege
			return true
		}
	}
	return false
}
