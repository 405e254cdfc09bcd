package budget_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"scan/internal/budget"
	"scan/internal/ledger"
	"scan/internal/pace"
	"scan/internal/pgtest"
	"scan/internal/send"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

func ms(d int) time.Time { return t0.Add(time.Duration(d) * time.Millisecond) }

func bySlots(gs []send.SlotGrant) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, g := range gs {
		out[g.Domain] = g.Slots
	}
	return out
}

// Two budgets on one ledger (two passes) share its buckets: a domain's
// slots are its rate apart whoever leased them, every slot also takes one
// of the global bucket (the later of the two times), an unlimited domain
// is paced by the global bucket alone, and a domain left short is told
// when to ask again.
func TestBudgetSharesTheLedgersBuckets(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	limits := pace.Limits{
		Default: pace.Bucket{PerSecond: 10, Burst: 1},
		Domains: map[string]pace.Bucket{"Slow.example": {PerSecond: 2, Burst: 1}},
		Global:  pace.Bucket{PerSecond: 20, Burst: 1},
		SMS:     pace.Bucket{PerSecond: 1, Burst: 1},
	}
	a := budget.New(db, limits, time.Second)
	b := budget.New(db, limits, time.Second)
	if !a.Paced("free.example") || !a.Paced("slow.example") {
		t.Fatal("with a global rate, every domain is paced")
	}
	ga, err := a.Lease(ctx, t0, []send.SlotAsk{{Domain: "slow.example", N: 2}, {Domain: "fast.example", N: 4}})
	if err != nil {
		t.Fatal(err)
	}
	gb, err := b.Lease(ctx, t0, []send.SlotAsk{{Domain: "slow.example", N: 5}, {Domain: "fast.example", N: 3}})
	if err != nil {
		t.Fatal(err)
	}
	got, other := bySlots(ga), bySlots(gb)
	// Global slots every 50 ms: slow 0, fast 0->50, slow 500, fast 100->...
	want := map[string][]time.Time{
		"slow.example": {ms(0), ms(500)},
		"fast.example": {ms(50), ms(100), ms(200), ms(300)},
	}
	for d, w := range want {
		if !slices.Equal(got[d], w) {
			t.Errorf("first pass, %s: slots %v, want %v", d, got[d], w)
		}
	}
	// The second pass gets what is left within the second: slow's next
	// slot (1 s), fast's 400..1000 ms, each after the first's global slots.
	wantOther := map[string][]time.Time{
		"slow.example": {ms(1000)},
		"fast.example": {ms(400), ms(500), ms(600)},
	}
	for d, w := range wantOther {
		if !slices.Equal(other[d], w) {
			t.Errorf("second pass, %s: slots %v, want %v", d, other[d], w)
		}
	}
	for _, g := range gb {
		if g.Domain == "slow.example" && !g.Retry.Equal(ms(750)) {
			t.Errorf("slow.example short by 4: retry at %v, want 750ms (its next slot, 1.5 s, less three quarters of the lease's second)", g.Retry.Sub(t0))
		}
	}
	// The sms queue takes rate.sms's slots, and none of the global
	// bucket's: the email slots above are all it gave.
	gs, err := a.Lease(ctx, t0, []send.SlotAsk{{Domain: budget.SMSDomain, N: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if got := bySlots(gs)[budget.SMSDomain]; !slices.Equal(got, []time.Time{ms(0), ms(1000)}) {
		t.Errorf("sms: slots %v, want 0 and 1s (1/s, one second ahead)", got)
	}
	var globalTat time.Time
	if err := db.Get(&globalTat, `SELECT tat FROM notice_rate WHERE bucket = 'global'`); err != nil {
		t.Fatal(err)
	}
	if !globalTat.Equal(ms(700)) {
		t.Errorf("the global bucket's next slot is %v, want 700ms (14 email slots, none for sms)", globalTat.Sub(t0))
	}
}
