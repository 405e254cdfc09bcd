package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

func witnessSettle(t *testing.T, db *sqlx.DB, ss ...ledger.Settlement) ledger.SettleResult {
	t.Helper()
	var res ledger.SettleResult
	err := ledger.WithTx(context.Background(), db, func(tx *sqlx.Tx) error {
		var err error
		res, err = ledger.Settle(context.Background(), tx, "test", t0, ss)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The second witness: events of notices the ledger does not hold are kept
// (still counted unknown), by key or by Message-ID, a replay once; a claim
// later minted for such a key is recorded sent (failed for a hard bounce)
// from that evidence, with the evidence moved under the notice, and is
// returned witnessed: not to be sent. Evidence that the provider did not
// send it witnesses nothing, and a provider id alone cannot be kept.
func TestUnmatchedEventsWitnessALaterClaim(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	at := t0.Add(-time.Hour)
	byKey, byMsgID, bounced, dropped, plain := claim(1, 0), claim(2, 0), claim(3, 0), claim(4, 0), claim(5, 0)
	evs := []ledger.Settlement{
		{Key: byKey.Key, ProviderID: "p-1", To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered, At: at},
		{MessageID: byMsgID.MessageID, To: ledger.Sent, Event: "Send", Kind: ledger.KindAccepted, At: at},
		{MessageID: bounced.MessageID, To: ledger.Failed, Event: "Bounce", Kind: ledger.KindBounceHard, At: at},
		{Key: dropped.Key, To: ledger.Retry, Event: "dropped", Kind: ledger.KindNotSent, At: at},
		{ProviderID: "only-a-provider-id", To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered, At: at},
	}
	res := witnessSettle(t, db, evs...)
	if res.Unknown != 5 || res.KeptUnknown != 4 {
		t.Fatalf("unknown %d, kept %d; want 5 and 4", res.Unknown, res.KeptUnknown)
	}
	if res := witnessSettle(t, db, evs...); res.KeptUnknown != 0 {
		t.Fatalf("a replay was kept again: %d", res.KeptUnknown)
	}
	won, err := ledger.Insert(ctx, db, opt("after-restore"), []ledger.Claim{byKey, byMsgID, bounced, dropped, plain})
	if err != nil || len(won) != 5 {
		t.Fatalf("claim: %+v, %v", won, err)
	}
	witnessed := map[string]bool{}
	for _, w := range won {
		witnessed[w.Key] = w.Witnessed
	}
	for c, want := range map[*ledger.Claim]ledger.State{&byKey: ledger.Sent, &byMsgID: ledger.Sent, &bounced: ledger.Failed, &dropped: ledger.Claimed, &plain: ledger.Claimed} {
		r := get(t, db, c.Key)
		if r.State != want || witnessed[c.Key] != (want != ledger.Claimed) {
			t.Fatalf("%s: state %s witnessed %v, want %s", c.Key[:12], r.State, witnessed[c.Key], want)
		}
		if want == ledger.Claimed {
			continue
		}
		if r.SettledBy == nil || *r.SettledBy != "witness" || r.SentAt == nil || !r.SentAt.Equal(at) {
			t.Fatalf("%s: settled_by %v sent_at %v", c.Key[:12], r.SettledBy, r.SentAt)
		}
		ev, err := ledger.EvidenceOf(ctx, db, []string{c.Key})
		if err != nil || len(ev[c.Key]) != 1 || ev[c.Key][0].Attempt != 1 {
			t.Fatalf("%s: evidence %+v, %v", c.Key[:12], ev, err)
		}
	}
	if r := get(t, db, byKey.Key); r.ProviderID == nil || *r.ProviderID != "p-1" {
		t.Fatalf("provider id %v", r.ProviderID)
	}
	// Moved, not copied: only the event that witnessed nothing is left.
	if n := count(t, db, `SELECT count(*) FROM notice_evidence_unmatched`); n != 1 {
		t.Fatalf("%d unmatched events left, want 1 (the dropped one)", n)
	}
	// Missed rows are not witnessed (nothing is sent for them anyway).
	late := claim(6, 0)
	witnessSettle(t, db, ledger.Settlement{Key: late.Key, To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered, At: at})
	mo := opt("missed")
	mo.State = ledger.Missed
	if won, err := ledger.Insert(ctx, db, mo, []ledger.Claim{late}); err != nil || len(won) != 1 || won[0].Witnessed {
		t.Fatalf("missed: %+v, %v", won, err)
	}
}

// Prune removes the unmatched evidence recorded before its horizon, and
// keeps what is newer.
func TestPruneRemovesOldUnmatchedEvidence(t *testing.T) {
	t.Parallel()
	db := setup(t)
	old, recent := claim(1, 0), claim(2, 0)
	witnessSettle(t, db, ledger.Settlement{Key: old.Key, To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered})
	err := ledger.WithTx(context.Background(), db, func(tx *sqlx.Tx) error {
		_, err := ledger.Settle(context.Background(), tx, "test", t0.Add(48*time.Hour),
			[]ledger.Settlement{{Key: recent.Key, To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ledger.Prune(context.Background(), db, ledger.PruneOptions{Before: t0.Add(24 * time.Hour)})
	if err != nil || res.Unmatched != 1 {
		t.Fatalf("prune: %+v, %v", res, err)
	}
	if n := count(t, db, `SELECT count(*) FROM notice_evidence_unmatched WHERE key32 = '`+recent.Key[:32]+`'`); n != 1 {
		t.Fatalf("the recent event was removed too")
	}
}

// Recover: a retry row that the provider's record shows delivered (of an
// attempt the restored row never had) becomes sent, settled by recovery,
// with the evidence kept; a notice the ledger lacks is kept as a witness;
// a settled one is already known; a provider id alone is unknown.
func TestRecoverRecordsWhatTheLedgerLacksOrHoldsClaimable(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	retry, sent, lacked := claim(1, 0), claim(2, 0), claim(3, 0)
	if _, err := ledger.Insert(ctx, db, opt("a"), []ledger.Claim{retry, sent}); err != nil {
		t.Fatal(err)
	}
	outs := []ledger.Outcome{{Key: retry.Key, PeriodStart: retry.PeriodStart, State: ledger.Retry, Error: "451"},
		{Key: sent.Key, PeriodStart: sent.PeriodStart, State: ledger.Sent, SentAt: t0}}
	if _, err := ledger.RecordOutcomes(ctx, db, "a", t0, outs); err != nil {
		t.Fatal(err)
	}
	var res ledger.RecoverResult
	err := ledger.WithTx(ctx, db, func(tx *sqlx.Tx) error {
		var err error
		res, err = ledger.Recover(ctx, tx, "recover", t0.Add(time.Hour), []ledger.Settlement{
			{MessageID: retry.MessageID, To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered, Attempt: 2, At: t0.Add(time.Minute)},
			{MessageID: sent.MessageID, To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered, At: t0.Add(time.Minute)},
			{MessageID: lacked.MessageID, To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered, At: t0.Add(time.Minute)},
			{ProviderID: "nobody", To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered},
		})
		return err
	})
	if err != nil || res.Recorded != 2 || res.AlreadyKnown != 1 || res.Unknown != 1 {
		t.Fatalf("recover: %+v, %v", res, err)
	}
	r := get(t, db, retry.Key)
	if r.State != ledger.Sent || r.SettledBy == nil || *r.SettledBy != ledger.SettledByRecovery {
		t.Fatalf("the proven retry: %s settled by %v", r.State, r.SettledBy)
	}
	if ev, _ := ledger.EvidenceOf(ctx, db, []string{retry.Key}); len(ev[retry.Key]) != 1 || ev[retry.Key][0].Attempt != 2 {
		t.Fatalf("evidence of the proven retry: %+v", ev)
	}
	if won, err := ledger.Insert(ctx, db, opt("b"), []ledger.Claim{lacked}); err != nil || len(won) != 1 || !won[0].Witnessed {
		t.Fatalf("the lacked notice's claim: %+v, %v", won, err)
	}
}

// A restored retry row is behind the attempts its messages carried: an
// acceptance or a delivery of a later attempt proves the notice went out,
// so Settle records it sent (no pass re-sends it); a "not sent" event of
// such an attempt changes nothing.
func TestSettleOfALaterAttemptOfARetryRecordsItSent(t *testing.T) {
	t.Parallel()
	db := setup(t)
	ctx := context.Background()
	lost, dropped := claim(1, 0), claim(2, 0)
	if _, err := ledger.Insert(ctx, db, opt("a"), []ledger.Claim{lost, dropped}); err != nil {
		t.Fatal(err)
	}
	outs := []ledger.Outcome{{Key: lost.Key, PeriodStart: lost.PeriodStart, State: ledger.Retry, Error: "451"},
		{Key: dropped.Key, PeriodStart: dropped.PeriodStart, State: ledger.Retry, Error: "451"}}
	if _, err := ledger.RecordOutcomes(ctx, db, "a", t0, outs); err != nil {
		t.Fatal(err)
	}
	res := witnessSettle(t, db,
		ledger.Settlement{Key: lost.Key, To: ledger.Sent, Event: "Delivery", Kind: ledger.KindDelivered, Attempt: 2, At: t0.Add(time.Hour)},
		ledger.Settlement{Key: dropped.Key, To: ledger.Retry, Event: "dropped", Kind: ledger.KindNotSent, Attempt: 2, At: t0.Add(time.Hour)})
	if len(res.Changed) != 1 || res.Each[0] != ledger.ResultSettled || res.Each[1] != ledger.ResultUnknown {
		t.Fatalf("settle: %+v", res)
	}
	if r := get(t, db, lost.Key); r.State != ledger.Sent || r.SettledBy == nil || *r.SettledBy != string(ledger.KindDelivered) {
		t.Fatalf("the lost attempt's row: %s settled by %v", r.State, r.SettledBy)
	}
	if ev, _ := ledger.EvidenceOf(ctx, db, []string{lost.Key}); len(ev[lost.Key]) != 1 || ev[lost.Key][0].Attempt != 2 {
		t.Fatalf("evidence: %+v", ev)
	}
	if r := get(t, db, dropped.Key); r.State != ledger.Retry {
		t.Fatalf("a not-sent event of a later attempt moved the row to %s", r.State)
	}
}
