package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/pgtest"
	_ "scan/internal/provider/registry" // the providers' formats
	"scan/internal/reconcile"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

func ledgerKey(i int) string { return ledgertest.Key(i) }

func ledgerMsgID(i int) string { return ledgertest.MessageID(i) }

// setup returns a migrated ledger holding n claims (keys 1..n) of run
// "crashed", none with an outcome.
func setup(t *testing.T, n int) *sqlx.DB {
	t.Helper()
	db := pgtest.New(t)
	ledgertest.Crashed(t, db, n, t0)
	return db
}

// events returns jsonl lines, one per (message, event) pair.
func events(pairs ...any) string {
	var b strings.Builder
	for i := 0; i < len(pairs); i += 2 {
		fmt.Fprintf(&b, "{\"message_id\":%q,\"event\":%q}\n", ledgerMsgID(pairs[i].(int)), pairs[i+1])
	}
	return b.String()
}

// clock counts its reads: Apply reads it once per batch.
type clock struct{ reads atomic.Int32 }

func (c *clock) now() time.Time {
	n := c.reads.Add(1)
	return t0.Add(time.Duration(n) * time.Minute)
}

func states(t *testing.T, db *sqlx.DB, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		r, err := ledger.Get(context.Background(), db, ledgerKey(i))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(string(r.State)[:1])
	}
	return b.String()
}

// Apply settles what the events prove, batch by batch, each batch with
// one reading of the clock recorded on its changes; it counts what it
// read and what it could not settle, and reports each change once.
func TestApplySettlesInBatches(t *testing.T) {
	t.Parallel()
	db := setup(t, 5)
	in := events(1, "delivered", 2, "rejected", 1, "bounced", 3, "opened", 99, "delivered", 4, "bounce", 4, "dropped", 5, "unsubscribed") +
		"{not json\n"
	var c clock
	var got []ledger.Change
	res, err := reconcile.Apply(context.Background(), db, strings.NewReader(in),
		reconcile.Options{By: "ops-bot", BatchSize: 2, Now: c.now},
		func(ch ledger.Change) error { got = append(got, ch); return nil })
	if err != nil {
		t.Fatal(err)
	}
	// 7 settlements (the unsubscribe proves nothing): batches of 2, 2, 2, 1.
	want := reconcile.Result{Stats: reconcile.Stats{Lines: 9, Payloads: 9, Malformed: 1, Irrelevant: 1,
		Problems: []reconcile.Problem{{Line: 9, Reason: "not a JSON object"}}}, Settled: 4, Unknown: 1, KeptUnknown: 1, Unchanged: 2} // the unknown one (99) kept as the second witness
	kinds, tally := res.Events, res.Tally
	res.Events, res.Tally = nil, nil
	if fmt.Sprint(res) != fmt.Sprint(want) {
		t.Fatalf("result = %+v, want %+v", res, want)
	}
	// Per kind, and per kind and result: event 4's bounce settled it, so
	// its dropped (not sent, but no acceptance to overrule) is only kept.
	wantKinds := map[ledger.EventKind]int{ledger.KindDelivered: 2, ledger.KindNotSent: 2, ledger.KindBounceSoft: 2, ledger.KindEngagement: 1}
	if fmt.Sprint(kinds) != fmt.Sprint(wantKinds) {
		t.Errorf("events by kind = %v, want %v", kinds, wantKinds)
	}
	tl := func(k ledger.EventKind, r string) int {
		return tally[reconcile.Tally{Provider: "jsonl", Event: k, Result: r}]
	}
	if tl(ledger.KindDelivered, "settled") != 1 || tl(ledger.KindDelivered, "unknown") != 1 || tl(ledger.KindNotSent, "settled") != 1 ||
		tl(ledger.KindNotSent, "recorded") != 1 || tl(ledger.KindOther, "malformed") != 1 || tl(ledger.KindOther, "irrelevant") != 1 {
		t.Errorf("tally = %v", tally)
	}
	if n := c.reads.Load(); n != 4 {
		t.Fatalf("the clock was read %d times, want once per batch (4)", n)
	}
	if s := states(t, db, 5); s != "srssc" {
		t.Fatalf("states = %s, want srssc", s)
	}
	if len(got) != 4 || got[0].Key != ledgerKey(1) || got[0].To != ledger.Sent || got[0].MessageID != ledgerMsgID(1) ||
		got[1].Key != ledgerKey(2) || got[1].To != ledger.Retry || got[3].Key != ledgerKey(4) {
		t.Fatalf("changes = %+v", got)
	}
	// Each change is recorded with the author and its batch's time: key 4
	// was settled by the third batch (its "dropped" in the fourth came too
	// late).
	var audit []struct {
		Key string    `db:"notice_key"`
		By  string    `db:"resolved_by"`
		At  time.Time `db:"resolved_at"`
	}
	if err := db.Select(&audit, `SELECT notice_key, resolved_by, resolved_at FROM notice_ledger_resolution ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	wantAt := map[string]time.Time{ledgerKey(1): t0.Add(time.Minute), ledgerKey(2): t0.Add(time.Minute),
		ledgerKey(3): t0.Add(2 * time.Minute), ledgerKey(4): t0.Add(3 * time.Minute)}
	if len(audit) != 4 {
		t.Fatalf("audit = %+v", audit)
	}
	for _, a := range audit {
		if a.By != "ops-bot" || !a.At.Equal(wantAt[a.Key]) {
			t.Errorf("audit %s by %s at %v, want ops-bot at %v", a.Key[:12], a.By, a.At, wantAt[a.Key])
		}
	}

	// The same events again change nothing.
	res, err = reconcile.Apply(context.Background(), db, strings.NewReader(in), reconcile.Options{By: "ops-bot", BatchSize: 2, Now: c.now}, nil)
	if err != nil || res.Settled != 0 || res.Unchanged != 6 || res.Unknown != 1 {
		t.Fatalf("second apply = %+v, %v", res, err)
	}
}

// The zero Options apply 1000 settlements per transaction, at time.Now.
func TestApplyDefaultBatch(t *testing.T) {
	t.Parallel()
	const n = reconcile.DefaultBatchSize + 1
	db := setup(t, n)
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(events(i, "delivered"))
	}
	var c clock
	res, err := reconcile.Apply(context.Background(), db, strings.NewReader(b.String()), reconcile.Options{Now: c.now}, nil)
	if err != nil || res.Settled != n {
		t.Fatalf("apply = %+v, %v", res.Settled, err)
	}
	if r := c.reads.Load(); r != 2 {
		t.Fatalf("%d batches, want 2", r)
	}
	before := time.Now()
	db2 := setup(t, 1)
	if _, err := reconcile.Apply(context.Background(), db2, strings.NewReader(events(1, "delivered")), reconcile.Options{}, nil); err != nil {
		t.Fatal(err)
	}
	var at time.Time
	if err := db2.Get(&at, `SELECT resolved_at FROM notice_ledger_resolution`); err != nil {
		t.Fatal(err)
	}
	if at.Before(before.Add(-time.Millisecond)) || at.After(time.Now()) {
		t.Fatalf("resolved at %v, not the wall clock's now", at)
	}
}

// errAfter reads s, then fails.
type errAfter struct {
	r   io.Reader
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, e.err
	}
	return n, err
}

// A batch once committed stays so: a reader that fails, or a caller that
// cannot take a change, stops Apply; the batches before are settled, the
// rest of the file is not.
func TestApplyStopsAfterCommittedBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	broken := errors.New("connection reset")
	db := setup(t, 5)
	in := &errAfter{strings.NewReader(events(1, "delivered", 2, "delivered", 3, "delivered")), broken}
	res, err := reconcile.Apply(ctx, db, in, reconcile.Options{BatchSize: 2}, nil)
	if !errors.Is(err, broken) {
		t.Fatalf("err = %v, want the reader's", err)
	}
	if res.Settled != 2 {
		t.Fatalf("settled %d, want the first batch's 2", res.Settled)
	}
	if s := states(t, db, 5); s != "ssccc" {
		t.Fatalf("states = %s, want the first batch only", s)
	}

	// The caller fails on the third change: batches one and two are
	// committed (the changes are reported after their commit), three is
	// never applied.
	db = setup(t, 5)
	full := errors.New("stdout closed")
	seen := 0
	_, err = reconcile.Apply(ctx, db, strings.NewReader(events(1, "delivered", 2, "delivered", 3, "delivered", 4, "delivered", 5, "delivered")),
		reconcile.Options{BatchSize: 2}, func(ledger.Change) error {
			if seen++; seen == 3 {
				return full
			}
			return nil
		})
	if !errors.Is(err, full) {
		t.Fatalf("err = %v, want the caller's", err)
	}
	if s := states(t, db, 5); s != "ssssc" {
		t.Fatalf("states = %s, want batches one and two settled", s)
	}
}
