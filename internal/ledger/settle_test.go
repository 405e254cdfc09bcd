package ledger_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
)

// attempt2 claims notice i, records its first attempt retry and re-claims
// it an hour later: the second attempt, in flight.
func attempt2(t *testing.T, db *sqlx.DB, i int) ledger.Claim {
	t.Helper()
	ctx := context.Background()
	c := claim(i, 0)
	won, err := ledger.Insert(ctx, db, opt("a1"), []ledger.Claim{c})
	if err != nil || len(won) != 1 || won[0].Attempt != 1 {
		t.Fatalf("first claim: %+v, %v", won, err)
	}
	out := ledger.Outcome{Key: c.Key, PeriodStart: c.PeriodStart, State: ledger.Retry, Error: "451 later", Digest: []byte("0123456789abcdef0123456789abcdef")}
	if _, err := ledger.RecordOutcomes(ctx, db, "a1", t0, []ledger.Outcome{out}); err != nil {
		t.Fatal(err)
	}
	o := opt("a2")
	o.Now = t0.Add(time.Hour)
	won, err = ledger.Reclaim(ctx, db, o, []string{c.Key})
	if err != nil || len(won) != 1 || won[0].Attempt != 2 {
		t.Fatalf("re-claim: %+v, %v", won, err)
	}
	return c
}

func get(t *testing.T, db *sqlx.DB, key string) ledger.Row {
	t.Helper()
	r, err := ledger.Get(context.Background(), db, key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A re-claim is a new attempt: attempts counts it, claimed_at is set anew
// and the first attempt's digest goes with it.
func TestReclaimIsANewAttempt(t *testing.T) {
	t.Parallel()
	db := setup(t)
	c := attempt2(t, db, 1)
	r := get(t, db, c.Key)
	if r.State != ledger.Claimed || r.Attempts != 2 || !r.ClaimedAt.Equal(t0.Add(time.Hour)) || r.MessageSHA256 != nil || r.SettledBy != nil {
		t.Fatalf("after re-claim: %+v", r)
	}
}

// An event settles only the attempt it names. The first attempt's events,
// replayed while the second is in quarantine, change nothing and are
// stale, whether they name attempt 1 or carry a time before the second
// claim (less ClockSkew) or no time at all; an attempt the notice never
// had is unknown. An event of the second attempt, by number or by time
// within ClockSkew of its claim, settles it.
func TestEventSettlesOnlyItsOwnAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := setup(t)
	c := attempt2(t, db, 1)
	claimed2 := t0.Add(time.Hour)
	stale := []ledger.Settlement{
		{Key: c.Key, To: ledger.Retry, Kind: ledger.KindNotSent, Event: "sendgrid:dropped", Attempt: 1, At: t0.Add(time.Minute)},
		{MessageID: c.MessageID, To: ledger.Failed, Kind: ledger.KindBounceHard, Event: "bounce", At: claimed2.Add(-ledger.ClockSkew - time.Second)},
		{MessageID: c.MessageID, To: ledger.Retry, Kind: ledger.KindNotSent, Event: "dropped"},
		{Key: c.Key, To: ledger.Sent, Kind: ledger.KindDelivered, Event: "ses:delivery", Attempt: 3, At: claimed2},
	}
	res, err := settle(ctx, db, "reconcile", claimed2.Add(time.Hour), stale)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Each); got != "[stale stale stale unknown]" || res.Stale != 3 || res.Unknown != 1 || len(res.Changed) != 0 {
		t.Fatalf("replayed first attempt: %+v", res)
	}
	if r := get(t, db, c.Key); r.State != ledger.Claimed || r.Attempts != 2 {
		t.Fatalf("the second attempt moved: %+v", r)
	}
	// A fresh event of the second attempt, dated within the allowance
	// before its claim (the provider's clock is a little behind): settles.
	res, err = settle(ctx, db, "reconcile", claimed2.Add(time.Hour), []ledger.Settlement{
		{MessageID: c.MessageID, To: ledger.Sent, Kind: ledger.KindDelivered, Event: "delivered", At: claimed2.Add(-ledger.ClockSkew + time.Second)},
	})
	if err != nil || fmt.Sprint(res.Each) != "[settled]" || len(res.Changed) != 1 || res.Changed[0].Attempt != 2 {
		t.Fatalf("fresh event: %+v, %v", res, err)
	}
	if r := get(t, db, c.Key); r.State != ledger.Sent || r.SettledBy == nil || *r.SettledBy != "delivered" {
		t.Fatalf("after the fresh event: %+v", r)
	}
	// The evidence of the first attempt that named it is kept under it.
	ev, err := ledger.EvidenceOf(ctx, db, []string{c.Key})
	if err != nil {
		t.Fatal(err)
	}
	if got := evidenceString(ev[c.Key]); got != "1:not_sent:sendgrid:dropped 2:delivered:delivered" {
		t.Fatalf("evidence %s", got)
	}
}

func evidenceString(es []ledger.Evidence) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, fmt.Sprintf("%d:%s:%s", e.Attempt, e.Kind, e.Event))
	}
	return strings.Join(parts, " ")
}

// "Not sent" outranks acceptance within one attempt, in one batch and
// across batches: a row settled sent from an acceptance moves to retry (or
// failed), its sent_at cleared. A row sent by the pass's own outcome, by an
// operator, or whose delivery was already seen stays sent.
func TestNotSentOverrulesAnAcceptance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := setup(t)
	cs := []ledger.Claim{claim(1, 0), claim(2, 0), claim(3, 0), claim(4, 0), claim(5, 0), claim(6, 0)}
	if _, err := ledger.Insert(ctx, db, opt("a"), cs); err != nil {
		t.Fatal(err)
	}
	// 4: the pass's own 250.
	if _, err := ledger.RecordOutcomes(ctx, db, "a", t0, []ledger.Outcome{{Key: cs[3].Key, State: ledger.Sent, SentAt: t0}}); err != nil {
		t.Fatal(err)
	}
	// 5: an operator's decision.
	d, _ := ledger.NewDecision(ledger.RulingSent, cs[4].Key, "carol", "seen in the console", t0)
	if _, err := ledger.ResolveKey(ctx, db, d); err != nil {
		t.Fatal(err)
	}
	acc := func(c ledger.Claim) ledger.Settlement {
		return ledger.Settlement{Key: c.Key, To: ledger.Sent, Kind: ledger.KindAccepted, Event: "sendgrid:processed", Attempt: 1, At: t0}
	}
	drop := func(c ledger.Claim, to ledger.State) ledger.Settlement {
		return ledger.Settlement{Key: c.Key, To: to, Kind: ledger.KindNotSent, Event: "sendgrid:dropped", Attempt: 1, At: t0.Add(time.Second)}
	}
	deliv := ledger.Settlement{Key: cs[5].Key, To: ledger.Sent, Kind: ledger.KindDelivered, Event: "sendgrid:delivered", Attempt: 1, At: t0}
	// 1: both in one batch; 2, 3, 6: the acceptance first, alone.
	res, err := settle(ctx, db, "reconcile", t0, []ledger.Settlement{acc(cs[0]), drop(cs[0], ledger.Retry), acc(cs[1]), acc(cs[2]), acc(cs[5]), deliv})
	if err != nil || fmt.Sprint(res.Each) != "[settled overruled settled settled settled recorded]" {
		t.Fatalf("first file: %+v, %v", res, err)
	}
	// The second file: "not sent" for each.
	res, err = settle(ctx, db, "reconcile", t0.Add(time.Hour), []ledger.Settlement{
		drop(cs[1], ledger.Retry), drop(cs[2], ledger.Failed), drop(cs[3], ledger.Retry), drop(cs[4], ledger.Retry), drop(cs[5], ledger.Retry)})
	if err != nil || fmt.Sprint(res.Each) != "[overruled overruled recorded recorded recorded]" {
		t.Fatalf("second file: %+v, %v", res, err)
	}
	for i, want := range []ledger.State{ledger.Retry, ledger.Retry, ledger.Failed, ledger.Sent, ledger.Sent, ledger.Sent} {
		r := get(t, db, cs[i].Key)
		if r.State != want {
			t.Errorf("notice %d: %s, want %s", i+1, r.State, want)
		}
		if want != ledger.Sent && r.SentAt != nil {
			t.Errorf("notice %d: %s with sent_at %v", i+1, r.State, r.SentAt)
		}
	}
	// The replay of the first file changes nothing and keeps nothing new.
	res, err = settle(ctx, db, "reconcile", t0.Add(2*time.Hour), []ledger.Settlement{acc(cs[0]), drop(cs[0], ledger.Retry)})
	if err != nil || fmt.Sprint(res.Each) != "[duplicate duplicate]" || get(t, db, cs[0].Key).State != ledger.Retry {
		t.Fatalf("replay: %+v, %v", res, err)
	}
}

// Evidence that arrives after sent is kept, each event once; a hard bounce
// makes the row failed (HardBounceFails), never retry; evidence that the
// provider had the message moves a retry it settled to sent.
func TestEvidenceAfterSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := setup(t)
	cs := []ledger.Claim{claim(1, 0), claim(2, 0), claim(3, 0)}
	if _, err := ledger.Insert(ctx, db, opt("a"), cs); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.RecordOutcomes(ctx, db, "a", t0, []ledger.Outcome{
		{Key: cs[0].Key, State: ledger.Sent, SentAt: t0}, {Key: cs[1].Key, State: ledger.Sent, SentAt: t0}, {Key: cs[2].Key, State: ledger.Retry, Error: "421"}}); err != nil {
		t.Fatal(err)
	}
	ss := []ledger.Settlement{
		{Key: cs[0].Key, To: ledger.Sent, Kind: ledger.KindDelivered, Event: "ses:delivery", Attempt: 1, At: t0.Add(time.Minute), Detail: "250 2.6.0 ok"},
		{Key: cs[0].Key, To: ledger.Sent, Kind: ledger.KindBounceSoft, Event: "ses:bounce/transient", Attempt: 1, At: t0.Add(2 * time.Minute)},
		{Key: cs[1].Key, To: ledger.Failed, Kind: ledger.KindBounceHard, Event: "ses:bounce/permanent", Attempt: 1, At: t0.Add(time.Minute)},
		{Key: cs[2].Key, To: ledger.Sent, Kind: ledger.KindDeferred, Event: "ses:deliverydelay", Attempt: 1, At: t0.Add(time.Minute)},
	}
	res, err := settle(ctx, db, "reconcile", t0.Add(time.Hour), append(ss, ss[0]))
	if err != nil || fmt.Sprint(res.Each) != "[recorded recorded settled settled duplicate]" {
		t.Fatalf("%+v, %v", res, err)
	}
	for i, want := range []ledger.State{ledger.Sent, ledger.Failed, ledger.Sent} {
		if r := get(t, db, cs[i].Key); r.State != want {
			t.Errorf("notice %d: %s, want %s", i+1, r.State, want)
		}
	}
	ev, err := ledger.EvidenceOf(ctx, db, []string{cs[0].Key})
	if err != nil {
		t.Fatal(err)
	}
	if got := evidenceString(ev[cs[0].Key]); got != "1:delivered:ses:delivery 1:bounce_soft:ses:bounce/transient" || ev[cs[0].Key][0].Detail != "250 2.6.0 ok" {
		t.Fatalf("evidence %s (%+v)", got, ev[cs[0].Key])
	}
	if res, err := settle(ctx, db, "reconcile", t0.Add(2*time.Hour), ss); err != nil || fmt.Sprint(res.Each) != "[duplicate duplicate duplicate duplicate]" {
		t.Fatalf("replay: %+v, %v", res, err)
	}
}

// The digest of the message handed over is stored with the outcome, an
// ambiguous one too.
func TestOutcomeStoresTheDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := setup(t)
	cs := []ledger.Claim{claim(1, 0), claim(2, 0), claim(3, 0)}
	if _, err := ledger.Insert(ctx, db, opt("a"), cs); err != nil {
		t.Fatal(err)
	}
	d1, d2 := sha256.Sum256([]byte("one")), sha256.Sum256([]byte("two"))
	if _, err := ledger.RecordOutcomes(ctx, db, "a", t0, []ledger.Outcome{
		{Key: cs[0].Key, State: ledger.Sent, SentAt: t0, Digest: d1[:]},
		{Key: cs[1].Key, State: ledger.Claimed, Error: "timeout", Digest: d2[:]},
		{Key: cs[2].Key, State: ledger.Retry, Error: "not attempted"}}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{fmt.Sprintf("%x", d1), fmt.Sprintf("%x", d2), ""} {
		if got := get(t, db, cs[i].Key).Digest(); got != want {
			t.Errorf("notice %d: digest %q, want %q", i+1, got, want)
		}
	}
}
