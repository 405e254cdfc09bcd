package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"scan/internal/ledger"
)

// Delivery per notice (issue 36): each notice's delivery follows from the
// evidence of its current attempt, the same in Go (Row.Delivery,
// DeliveryOf) and in SQL (DeliverySQL); a bounce after a delivery wins,
// a delivery after a bounce does not; scan undelivered lists the sent
// rows that are undeliverable, with the kind of their evidence as reason,
// and the unconfirmed ones once their window has closed.
func TestDeliveryPerNotice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := setup(t)
	var cs []ledger.Claim
	for i := 1; i <= 8; i++ {
		cs = append(cs, claim(i, 0))
	}
	if _, err := ledger.Insert(ctx, db, opt("a"), cs); err != nil {
		t.Fatal(err)
	}
	var outs []ledger.Outcome
	for _, c := range cs[:7] { // notice 8 stays claimed (quarantine)
		outs = append(outs, ledger.Outcome{Key: c.Key, State: ledger.Sent, SentAt: t0})
	}
	if _, err := ledger.RecordOutcomes(ctx, db, "a", t0, outs); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Minute)
	ev := func(i int, to ledger.State, k ledger.EventKind, name string) ledger.Settlement {
		return ledger.Settlement{Key: cs[i-1].Key, To: to, Kind: k, Event: name, Attempt: 1, At: at}
	}
	first := []ledger.Settlement{
		ev(1, ledger.Sent, ledger.KindDelivered, "ses:delivery"),
		ev(2, ledger.Sent, ledger.KindBounceSoft, "ses:bounce/transient"),
		ev(3, ledger.Sent, ledger.KindDeferred, "ses:deliverydelay"), // not yet known
		ev(4, ledger.Failed, ledger.KindBounceHard, "ses:bounce/permanent"),
		ev(5, ledger.Sent, ledger.KindDelivered, "ses:delivery"),
		ev(6, ledger.Sent, ledger.KindBlocked, "sendgrid:bounce/blocked"),
		ev(7, ledger.Sent, ledger.KindDropped, "sendgrid:dropped"),
	}
	if _, err := settle(ctx, db, "reconcile", t0.Add(time.Hour), first); err != nil {
		t.Fatal(err)
	}
	later := []ledger.Settlement{
		ev(5, ledger.Sent, ledger.KindBounceSoft, "ses:bounce/transient"), // bounced after delivery: undeliverable
		ev(6, ledger.Sent, ledger.KindDelivered, "sendgrid:delivered"),    // delivered after a block: stays undeliverable
	}
	if _, err := settle(ctx, db, "reconcile", t0.Add(2*time.Hour), later); err != nil {
		t.Fatal(err)
	}
	want := []ledger.Delivery{ledger.DeliveryDelivered, ledger.DeliveryUndeliverable, ledger.DeliveryUnconfirmed,
		ledger.DeliveryUndeliverable, ledger.DeliveryUndeliverable, ledger.DeliveryUndeliverable, ledger.DeliveryUndeliverable,
		ledger.DeliveryNone}
	rows, err := ledger.BySubscription(ctx, db, "sub_1")
	if err != nil || len(rows) != 1 || rows[0].Delivery != ledger.DeliveryDelivered {
		t.Fatalf("lookup of notice 1: %+v, %v", rows, err)
	}
	for i, c := range cs {
		r := get(t, db, c.Key)
		if r.Delivery != want[i] || r.DeliveryOf() != want[i] {
			t.Errorf("notice %d (%s, evidence %q): delivery %q, want %q", i+1, r.State, r.DeliveryKind, r.Delivery, want[i])
		}
		var inSQL string
		if err := db.GetContext(ctx, &inSQL, `SELECT `+ledger.DeliverySQL("x")+` FROM notice_ledger x WHERE notice_key = $1`, c.Key); err != nil || inSQL != string(want[i]) {
			t.Errorf("notice %d: DeliverySQL %q, %v; want %q", i+1, inSQL, err, want[i])
		}
	}
	// window closes at t0+24h: before, notice 3 (unconfirmed) is on its way.
	for now, wantReasons := range map[time.Time]string{
		t0.Add(3 * time.Hour):  "sub_2:bounce_soft sub_4:bounced sub_5:bounce_soft sub_6:blocked sub_7:dropped sub_8:quarantine",
		t0.Add(25 * time.Hour): "sub_2:bounce_soft sub_3:unconfirmed sub_4:bounced sub_5:bounce_soft sub_6:blocked sub_7:dropped sub_8:quarantine",
	} {
		un, err := ledger.Undelivered(ctx, db, t0.Add(-time.Hour), now, 100)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, u := range un {
			got[u.SubscriptionID] = u.Reason
		}
		var s string
		for i := 1; i <= 8; i++ {
			if r, ok := got[fmt.Sprintf("sub_%d", i)]; ok {
				s += fmt.Sprintf(" sub_%d:%s", i, r)
			}
		}
		if s != " "+wantReasons {
			t.Errorf("undelivered at %s:%s\nwant %s", now, s, wantReasons)
		}
	}
}

// The rule that carries a notice on to the next channel (CarriesOn,
// CarriedOnSQL): failed or undeliverable always; unconfirmed only with a
// confirm_within that has run out since it was sent; delivered never.
func TestCarriesOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := setup(t)
	cs := []ledger.Claim{claim(1, 0), claim(2, 0), claim(3, 0)}
	if _, err := ledger.Insert(ctx, db, opt("a"), cs); err != nil {
		t.Fatal(err)
	}
	var outs []ledger.Outcome
	for _, c := range cs {
		outs = append(outs, ledger.Outcome{Key: c.Key, State: ledger.Sent, SentAt: t0})
	}
	if _, err := ledger.RecordOutcomes(ctx, db, "a", t0, outs); err != nil {
		t.Fatal(err)
	}
	if _, err := settle(ctx, db, "reconcile", t0.Add(time.Hour), []ledger.Settlement{
		{Key: cs[0].Key, To: ledger.Sent, Kind: ledger.KindDelivered, Event: "ses:delivery", Attempt: 1, At: t0.Add(time.Minute)},
		{Key: cs[1].Key, To: ledger.Sent, Kind: ledger.KindBounceSoft, Event: "ses:bounce/transient", Attempt: 1, At: t0.Add(time.Minute)},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now     time.Time
		confirm time.Duration
		want    string // of notices 1..3: delivered, undeliverable, unconfirmed
	}{
		{t0.Add(time.Hour), 0, "-+-"},
		{t0.Add(3 * time.Hour), 0, "-+-"},
		{t0.Add(time.Hour), 2 * time.Hour, "-+-"},
		{t0.Add(2 * time.Hour), 2 * time.Hour, "-++"},
		{t0.Add(3 * time.Hour), 2 * time.Hour, "-++"},
	} {
		var inGo, inSQL string
		for _, c := range cs {
			r := get(t, db, c.Key)
			inGo += map[bool]string{true: "+", false: "-"}[ledger.CarriesOn(r, tc.now, tc.confirm)]
			var confirm *string
			if tc.confirm > 0 {
				s := fmt.Sprintf("%d seconds", int(tc.confirm.Seconds()))
				confirm = &s
			}
			var on bool
			if err := db.GetContext(ctx, &on, `SELECT `+ledger.CarriedOnSQL("e", "$2", "$3")+` FROM notice_ledger e WHERE notice_key = $1`, c.Key, tc.now, confirm); err != nil {
				t.Fatal(err)
			}
			inSQL += map[bool]string{true: "+", false: "-"}[on]
		}
		if inGo != tc.want || inSQL != tc.want {
			t.Errorf("at %s, confirm_within %s: Go %s, SQL %s; want %s", tc.now.Sub(t0), tc.confirm, inGo, inSQL, tc.want)
		}
	}
}

// A notice's delivery is its current attempt's: evidence of an earlier
// attempt does not count for a later one.
func TestDeliveryOfCurrentAttemptOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state             ledger.State
		kind              ledger.EventKind
		evAttempt, others int
		want              ledger.Delivery
	}{
		{ledger.Sent, ledger.KindDelivered, 1, 1, ledger.DeliveryDelivered},
		{ledger.Sent, ledger.KindDelivered, 1, 0, ledger.DeliveryDelivered}, // rows claimed before attempts counted
		{ledger.Sent, ledger.KindBounceSoft, 1, 2, ledger.DeliveryUnconfirmed},
		{ledger.Claimed, ledger.KindBounceHard, 1, 2, ledger.DeliveryNone},
		{ledger.Failed, ledger.KindBounceHard, 2, 2, ledger.DeliveryUndeliverable},
		{ledger.Failed, "", 0, 1, ledger.DeliveryNone},
		{ledger.Retry, ledger.KindNotSent, 1, 1, ledger.DeliveryUndeliverable},
		{ledger.Sent, ledger.KindDeferred, 1, 1, ledger.DeliveryUnconfirmed},
	} {
		if got := ledger.DeliveryOf(tc.state, tc.kind, tc.evAttempt, tc.others); got != tc.want {
			t.Errorf("%+v: %q", tc, got)
		}
	}
}
