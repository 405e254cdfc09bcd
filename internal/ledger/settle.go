package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// EventKind is what a provider event says about one attempt of a notice,
// in the vocabulary of `scan reconcile`'s counts and of the metric
// scan_reconcile_events_total{event}.
type EventKind string

// The kinds of provider events.
const (
	KindAccepted   EventKind = "accepted"    // the provider took the message (SES Send, SendGrid processed, Mailgun accepted)
	KindDelivered  EventKind = "delivered"   // the receiving server took it
	KindDeferred   EventKind = "deferred"    // delivery delayed; the provider keeps trying
	KindBounceSoft EventKind = "bounce_soft" // a soft bounce the provider reports as final (its own retries ran out)
	KindBounceHard EventKind = "bounce_hard" // a permanent bounce: the address does not take mail
	KindBlocked    EventKind = "blocked"     // the receiving server refused it for the sender or the content (a block, DMARC)
	KindComplaint  EventKind = "complaint"   // the recipient marked it as spam
	KindNotSent    EventKind = "not_sent"    // the provider did not send it (rejected, suppressed)
	KindDropped    EventKind = "dropped"     // the provider accepted it, then dropped it unsent (SendGrid dropped, Mailgun suppress-*)
	KindEngagement EventKind = "engagement"  // opened or clicked
	KindOther      EventKind = "other"       // anything else
)

// EventKinds lists every kind, in the order reports print them.
var EventKinds = []EventKind{KindAccepted, KindDelivered, KindDeferred, KindBounceSoft, KindBounceHard,
	KindBlocked, KindComplaint, KindNotSent, KindDropped, KindEngagement, KindOther}

// LeftProvider reports whether an event of kind k proves that the provider
// had the message on its way to the recipient (delivered, deferred,
// bounced, complained, opened, clicked): such evidence never leads to a
// resend.
func (k EventKind) LeftProvider() bool {
	switch k {
	case KindDelivered, KindDeferred, KindBounceSoft, KindBounceHard, KindBlocked, KindComplaint, KindEngagement:
		return true
	}
	return false
}

// NotSent reports whether an event of kind k proves that the provider
// never sent its attempt: not_sent, or dropped after it accepted it. Such
// evidence overrules an acceptance (decide).
func (k EventKind) NotSent() bool { return k == KindNotSent || k == KindDropped }

// Delivery is what the evidence says of an attempt, or of a notice
// (DeliveryOf), in the vocabulary of `scan lookup`'s delivery.
type Delivery string

// The deliveries.
const (
	DeliveryNone          Delivery = ""              // not sent (no attempt accepted)
	DeliveryDelivered     Delivery = "delivered"     // the provider confirmed delivery
	DeliveryUndeliverable Delivery = "undeliverable" // the provider reports it will not arrive
	DeliveryUnconfirmed   Delivery = "unconfirmed"   // accepted, not (yet) confirmed either way
)

// Delivery sorts an event of kind k into what it proves of its attempt:
// delivered (SES Delivery, SendGrid, Mailgun and Twilio delivered,
// Postmark Delivery), undeliverable (a hard bounce, a soft bounce the
// provider reports as final, a block, a drop after acceptance, a
// provider's refusal: Twilio undelivered or failed), or nothing yet
// (DeliveryNone: accepted, deferred, complaint, engagement, other). Each
// provider's package decides which of its events is which kind; this is
// the one rule from kind to delivery.
func (k EventKind) Delivery() Delivery {
	switch k {
	case KindDelivered:
		return DeliveryDelivered
	case KindBounceHard, KindBounceSoft, KindBlocked, KindDropped, KindNotSent:
		return DeliveryUndeliverable
	}
	return DeliveryNone
}

// SettledByOperator is the settled_by of a row an operator decided (scan
// resolve): no provider event changes it.
const SettledByOperator = "operator"

// ClockSkew is how much earlier than an attempt's claim an event that
// names no attempt may be dated and still count for that attempt: the
// provider's clock and ours may differ by this much. Events dated earlier
// belong to an earlier attempt and are stale. One minute: NTP-synchronised
// clocks differ by milliseconds, and a re-claim follows its previous
// attempt's events by at least a pass's interval (hours).
const ClockSkew = time.Minute

// HardBounceFails says what a hard bounce does to a row already sent: it
// becomes failed (the address does not take mail; never resent by a
// pass, `scan resolve --retry` may send it again once the address is
// fixed), unless an operator decided the row.
const HardBounceFails = true

// Result is what one provider event did, in the vocabulary of the metric
// scan_reconcile_events_total{result}.
type Result string

// The results of a settlement.
const (
	ResultSettled   Result = "settled"   // it settled its attempt (claimed, or retry proven sent, or sent hard-bounced)
	ResultOverruled Result = "overruled" // "not sent" moved a row settled sent from an acceptance to retry or failed
	ResultRecorded  Result = "recorded"  // kept as evidence; the row's state stands
	ResultDuplicate Result = "duplicate" // already kept: a replay
	ResultStale     Result = "stale"     // about an earlier attempt: changes nothing
	ResultUnknown   Result = "unknown"   // matches no notice (or names an attempt it never had)
)

// Results lists every Result, in the order reports and the metric's help
// give them.
var Results = []Result{ResultSettled, ResultOverruled, ResultRecorded, ResultDuplicate, ResultStale, ResultUnknown}

// Settlement is one provider event to apply to a notice. It names the
// notice by its notice key, the provider's id or its Message-ID, tried in
// that order; at least one must be set.
type Settlement struct {
	Key        string    // the notice key the provider echoed; may be empty
	ProviderID string    // the provider's message id; may be empty
	MessageID  string    // without angle brackets; may be empty
	To         State     // what the event proves of its attempt: Sent, Retry or Failed
	Event      string    // the provider's event name, kept with the evidence
	At         time.Time // when the provider saw it; zero when unknown
	Attempt    int       // the attempt the provider echoed; 0 when none
	Kind       EventKind // "" is KindOther
	Detail     string    // kept with the evidence (a bounce code, a response); may be empty
}

// SettleResult says what a batch of settlements did.
type SettleResult struct {
	Changed []Change // rows whose state changed (settled or overruled)
	Each    []Result // what each settlement did, by index
	Unknown int      // settlements that match no notice
	// KeptUnknown counts the settlements among Unknown that were kept as
	// the second witness (notice_evidence_unmatched) for the first time:
	// those that named a key or a Message-ID of the notice-key form.
	KeptUnknown int
	// freshUnmatched are the key32s of the events KeptUnknown counts.
	freshUnmatched []string
	Unchanged      int // settlements kept as evidence only (recorded or duplicate)
	Stale          int // settlements about an earlier attempt
}

// Change is one row whose state an event changed.
type Change struct {
	Key       string `json:"notice_key"`
	MessageID string `json:"message_id"`
	Attempt   int    `json:"attempt"`
	From      State  `json:"from"`
	To        State  `json:"to"`
	Event     string `json:"event"`
}

// settleRow is a row as Settle reads it, kept current as the batch goes.
type settleRow struct {
	Key         string    `db:"notice_key"`
	MessageID   string    `db:"message_id"`
	ProviderID  string    `db:"provider_id"`
	State       State     `db:"state"`
	PeriodStart time.Time `db:"period_start"`
	Attempts    int       `db:"attempts"`
	ClaimedAt   time.Time `db:"claimed_at"`
	SettledBy   string    `db:"settled_by"`
}

// current is the number of the row's current attempt (a row claimed
// before attempts counted claims has 0: its first).
func (r *settleRow) current() int { return max(r.Attempts, 1) }

// attemptOf returns the attempt an event is about, 0 when it cannot be
// told (then it is stale). An event that names its attempt is about that
// one. One that does not is about the current attempt if the row has had
// only one, else if it is dated no earlier than the current claim less
// ClockSkew; undated, it cannot be told.
func (r *settleRow) attemptOf(named int, at time.Time) int {
	cur := r.current()
	switch {
	case named > 0:
		return named
	case cur == 1:
		return 1
	case !at.IsZero() && !at.Before(r.ClaimedAt.Add(-ClockSkew)):
		return cur
	}
	return 0
}

// decide says what an event of the row's current attempt does: the state
// the row moves to ("" for none), whether that overrules an acceptance,
// and the settled_by to record.
//
// A claim is settled by the event. A row settled sent from an acceptance
// is overruled by "not sent" evidence (to retry or failed) and, once
// evidence shows the message left the provider, can no longer be
// (settled_by moves to that kind). A retry that evidence proves the
// provider had becomes sent (or failed for a hard bounce): never a
// resend. A sent row that hard-bounces becomes failed (HardBounceFails).
// An operator's decision stands.
func (r *settleRow) decide(kind EventKind, to State) (next State, overrule bool) {
	if r.SettledBy == SettledByOperator {
		return "", false
	}
	switch {
	case r.State == Claimed:
		return to, false
	case r.State == Sent && r.SettledBy == string(KindAccepted) && kind.NotSent():
		return to, true
	case r.State == Sent && kind == KindBounceHard && HardBounceFails:
		return Failed, false
	case r.State == Sent && r.SettledBy == string(KindAccepted) && kind.LeftProvider():
		return Sent, false // only settled_by changes
	case r.State == Retry && kind.LeftProvider():
		return to, false
	}
	return "", false
}

// Settle applies provider events to the notices they name (see decide),
// each event to its own attempt only, and keeps every event of a known
// attempt as evidence (notice_evidence), a replay once. A settlement finds
// its row by notice key, else by provider id (claims in quarantine only,
// unless several share that id), else by Message-ID. Events for the same
// row are applied in order. Each change is recorded with by as its author.
// An event that matches no notice is not dropped: when it names a key or
// a Message-ID of the notice-key form it is kept as the second witness
// (notice_evidence_unmatched, under the key's first 32 hex characters), so
// that a claim later minted for that key (after a restore lost it) is
// recorded sent from it instead of being sent again (noticeClaim). It
// still counts as ResultUnknown.
// All of it is written in the caller's transaction tx (WithTx), so that
// the batch is applied whole or not at all.
func Settle(ctx context.Context, tx *sqlx.Tx, by string, now time.Time, ss []Settlement) (SettleResult, error) {
	res := SettleResult{Each: make([]Result, len(ss))}
	if len(ss) == 0 {
		return res, nil
	}
	// What the provider told is committed synchronously, as claims are: a
	// receiver answers 2xx once it commits, and a second witness lost in a
	// crash after that answer could let a restored ledger send twice. The
	// look-up sets it (noticeListForSettlement), one round trip for both.
	find, err := settleRows(ctx, tx, ss)
	if err != nil {
		return SettleResult{}, err
	}
	var kept evidenceBatch
	var witness unmatchedBatch
	var delivery deliveryBatch
	for i, s := range ss {
		s = s.normalized()
		r := find(s)
		if r == nil {
			res.Each[i] = ResultUnknown
			witness.add(s)
			continue
		}
		if r.lostAttempt(s) {
			if err := settleLost(ctx, tx, by, now, r, s, string(s.Kind), &res); err != nil {
				return SettleResult{}, err
			}
			res.Each[i] = ResultSettled
			kept.add(i, r, s.Attempt, s)
			continue
		}
		attempt, result := r.triage(s)
		if result == "" {
			if result, err = settleOne(ctx, tx, by, now, r, s, &res); err != nil {
				return SettleResult{}, err
			}
		}
		res.Each[i] = result
		if attempt > 0 { // one of r's own attempts: kept as evidence
			kept.add(i, r, attempt, s)
		}
		if attempt > 0 && attempt == r.current() && r.State != "" {
			delivery.add(r, attempt, s.Kind)
		}
	}
	if err := delivery.write(ctx, tx); err != nil {
		return SettleResult{}, err
	}
	if err := suppressSettled(ctx, tx, now, ss, find); err != nil {
		return SettleResult{}, err
	}
	fresh, err := kept.insert(ctx, tx, now)
	if err != nil {
		return SettleResult{}, err
	}
	if res.freshUnmatched, err = witness.insert(ctx, tx, by, now); err != nil {
		return SettleResult{}, err
	}
	res.KeptUnknown = len(res.freshUnmatched)
	res.count(fresh)
	return res, nil
}

// lostAttempt reports whether s proves that an attempt r never had went
// out: r is a retry, and s names a later attempt that the provider
// accepted or delivered. Only a ledger that lost state (restored, or
// failed over) can be behind the attempts its messages carried; left a
// retry, the next pass would send the notice again.
func (r *settleRow) lostAttempt(s Settlement) bool {
	return r.State == Retry && r.SettledBy != SettledByOperator && s.Attempt > r.current() &&
		(s.Kind == KindAccepted || s.Kind.LeftProvider())
}

// settleLost records r sent from s, an acceptance of an attempt the row
// may not know of (lostAttempt, or `scan recover`'s record), with
// settledBy; a row that changed meanwhile is left alone.
func settleLost(ctx context.Context, tx *sqlx.Tx, by string, now time.Time, r *settleRow, s Settlement, settledBy string, res *SettleResult) error {
	d := Decision{Key: r.Key, To: Sent, By: by, Reason: "provider record " + s.Event + " of a later attempt", At: now, SentAt: s.At,
		settledBy: settledBy}
	err := resolveLocked(ctx, tx, d, r.State, r.PeriodStart)
	if errors.Is(err, ErrStateChanged) {
		return nil
	}
	if err != nil {
		return err
	}
	res.Changed = append(res.Changed, Change{Key: r.Key, MessageID: r.MessageID, Attempt: max(s.Attempt, r.current()), From: r.State, To: Sent, Event: s.Event})
	r.State, r.SettledBy = Sent, settledBy
	return nil
}

// normalized returns s as the ledger keeps it: At to the microsecond, as
// PostgreSQL stores it, and no Kind as KindOther.
func (s Settlement) normalized() Settlement {
	s.At = s.At.Truncate(time.Microsecond)
	if s.Kind == "" {
		s.Kind = KindOther
	}
	return s
}

// triage says which attempt of r the event s is about (attemptOf; 0 for
// none of r's own) and what the event does when that is not the current
// one: ResultStale for an earlier attempt or one that cannot be told,
// ResultUnknown for an attempt r never had. For the current attempt it
// returns "": the event may settle it (settleOne).
func (r *settleRow) triage(s Settlement) (attempt int, result Result) {
	attempt = r.attemptOf(s.Attempt, s.At)
	switch {
	case attempt == 0:
		return 0, ResultStale
	case attempt > r.current():
		return 0, ResultUnknown
	case attempt < r.current():
		return attempt, ResultStale
	}
	return attempt, ""
}

// count tallies res.Each once the batch's evidence is kept: an event only
// recorded that fresh does not list (kept before, or earlier in the same
// batch) becomes a duplicate.
func (res *SettleResult) count(fresh map[int]bool) {
	for i, r := range res.Each {
		switch {
		case r == ResultRecorded && !fresh[i]:
			res.Each[i] = ResultDuplicate
			res.Unchanged++
		case r == ResultRecorded:
			res.Unchanged++
		case r == ResultUnknown:
			res.Unknown++
		case r == ResultStale:
			res.Stale++
		}
	}
}

// settleRows makes tx commit synchronously, reads the rows a batch may
// name and returns how to find the row of one settlement (nil: none).
func settleRows(ctx context.Context, tx *sqlx.Tx, ss []Settlement) (func(Settlement) *settleRow, error) {
	var keys, provs, ids []string
	keyless := false
	for _, s := range ss {
		if s.Key != "" {
			keys = append(keys, s.Key)
		} else {
			keyless = true
		}
		if s.ProviderID != "" {
			provs = append(provs, s.ProviderID)
		}
		if s.MessageID != "" {
			ids = append(ids, s.MessageID)
		}
	}
	var rows []settleRow
	if err := sqlx.SelectContext(ctx, tx, &rows, noticeListForSettlement, pq.Array(keys), pq.Array(provs), pq.Array(ids), keyless); err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	found := rows[:0]
	for _, r := range rows {
		if r.Key != "" { // the one row of a look-up that found nothing
			found = append(found, r)
		}
	}
	rows = found
	byKey := make(map[string]*settleRow, len(rows))
	byProv := map[string]*settleRow{}
	byID := map[string]*settleRow{}
	for i := range rows {
		r := &rows[i]
		byKey[r.Key] = r
		if r.ProviderID != "" {
			if _, dup := byProv[r.ProviderID]; dup {
				byProv[r.ProviderID] = nil // shared: names no one row
			} else {
				byProv[r.ProviderID] = r
			}
		}
		if r.MessageID != "" {
			byID[r.MessageID] = r
		}
	}
	return func(s Settlement) *settleRow {
		var r *settleRow
		if s.Key != "" {
			r = byKey[s.Key]
		}
		if r == nil && s.ProviderID != "" {
			r = byProv[s.ProviderID]
		}
		if r == nil && s.MessageID != "" {
			r = byID[s.MessageID]
		}
		return r
	}, nil
}

// settleOne applies one event of r's current attempt.
func settleOne(ctx context.Context, tx *sqlx.Tx, by string, now time.Time, r *settleRow, s Settlement, res *SettleResult) (Result, error) {
	next, overrule := r.decide(s.Kind, s.To)
	if next == "" {
		return ResultRecorded, nil
	}
	d := Decision{Key: r.Key, To: next, By: by, Reason: "provider event " + s.Event, At: now, SentAt: s.At,
		settledBy: string(s.Kind), attempt: r.current(), clearSentAt: overrule}
	err := resolveLocked(ctx, tx, d, r.State, r.PeriodStart)
	if errors.Is(err, ErrStateChanged) {
		// A pass recorded an outcome or re-claimed the row since it was
		// read (the UPDATE changed no row, so the transaction is intact).
		r.State = ""
		return ResultRecorded, nil
	}
	if err != nil {
		return "", err
	}
	from := r.State
	r.State, r.SettledBy = next, string(s.Kind)
	if from == next {
		return ResultRecorded, nil
	}
	res.Changed = append(res.Changed, Change{Key: r.Key, MessageID: r.MessageID, Attempt: r.current(), From: from, To: next, Event: s.Event})
	if overrule {
		return ResultOverruled, nil
	}
	return ResultSettled, nil
}
