package observe_test

import (
	"context"
	"testing"
	"time"

	"scan/internal/ledger"
	"scan/internal/metrics/metricstest"
	"scan/internal/observe"
	"scan/internal/reconcile"
)

// Without a Pushgateway nothing is pushed; with one, the undelivered
// notices are counted by reason (every reason present, zero or not), and
// a reconcile's events by kind and result, grouped by the format.
func TestPushes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	list := []ledger.Unreached{{Reason: ledger.UndeliveredBounced}, {Reason: ledger.UndeliveredBounced}, {Reason: ledger.UndeliveredMissed}}
	res := reconcile.Result{Tally: map[reconcile.Tally]int{{Event: ledger.KindDelivered, Result: "settled"}: 3}}
	if err := observe.PushUndelivered(ctx, "", list); err != nil {
		t.Fatal(err)
	}
	if err := observe.PushReconcile(ctx, "", "ses", res); err != nil {
		t.Fatal(err)
	}
	gw := metricstest.New(t)
	if err := observe.PushUndelivered(ctx, gw.URL, list); err != nil {
		t.Fatal(err)
	}
	// A cancelled context (SIGTERM) still pushes what reconcile applied.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := observe.PushReconcile(cancelled, gw.URL, "ses", res); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := gw.Wait(wctx, 2); err != nil {
		t.Fatalf("pushes: %v", err)
	}
	und := gw.Group("job=scan_undelivered")["scan_undelivered_notices"]
	for reason, want := range map[string]float64{ledger.UndeliveredBounced: 2, ledger.UndeliveredMissed: 1, ledger.UndeliveredFailed: 0} {
		if v, ok := metricstest.Value(und, map[string]string{"reason": reason}); !ok || v != want {
			t.Errorf("scan_undelivered_notices{reason=%s} = %v (present %v), want %v", reason, v, ok, want)
		}
	}
	rec := gw.Group("job=scan_reconcile,provider=ses")["scan_reconcile_events_total"]
	if v, ok := metricstest.Value(rec, map[string]string{"event": string(ledger.KindDelivered), "result": "settled"}); !ok || v != 3 {
		t.Errorf("scan_reconcile_events_total{event=delivered,result=settled} = %v (present %v), want 3", v, ok)
	}
}
