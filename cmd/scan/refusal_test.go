package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Issue 38, section 3: a refusal (the ledger's database on another
// timeline than the last pass found it) shows in the dry run, which
// writes nothing and exits 4 as the pass would, and ends `scan schedule`
// with exit 4 at its first firing instead of being logged at each one.
func TestRefusalInDryRunAndSchedule(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, ownDatabase(t)) // its scheduler takes the one-per-database lock: not beside the others
	f.passIn(nil)
	f.add(3)
	count := func() (epochs, rows int) {
		f.t.Helper()
		if err := f.db.QueryRow(`SELECT (SELECT count(*) FROM notice_ledger_epoch), (SELECT count(*) FROM notice_ledger)`).Scan(&epochs, &rows); err != nil {
			f.t.Fatal(err)
		}
		return epochs, rows
	}
	// Before the failover the dry run reports no refusal.
	if code, out, errOut := f.runIn(nil, "run", "--dry-run"); code != 0 || strings.Contains(out, "would_refuse") || !strings.Contains(out, `"would_mint":3`) {
		t.Fatalf("dry run before: %d %s %s", code, out, tail(errOut))
	}
	f.db.MustExec(`UPDATE notice_ledger_epoch SET timeline = timeline + 1`)
	e0, r0 := count()
	code, out, errOut := f.runIn(nil, "run", "--dry-run")
	if code != exitRestored || !strings.Contains(out, `"would_refuse":"`) || !strings.Contains(out, "scan recover") {
		t.Fatalf("dry run after the timeline changed: exit %d, want 4, and the reason\n%s\n%s", code, out, tail(errOut))
	}
	if e, r := count(); e != e0 || r != r0 {
		t.Fatalf("the dry run wrote: epochs %d -> %d, ledger rows %d -> %d", e0, e, r0, r)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := startScheduler(ctx, f.getenv(), "--cron", "@every 1s", "--batch-size", "10")
	select {
	case code := <-s.done:
		if code != exitRestored || !strings.Contains(s.stderr.String(), "scan recover") {
			t.Fatalf("scheduler: exit %d, want 4\n%s", code, tail(s.stderr.String()))
		}
	case <-ctx.Done():
		t.Fatalf("the scheduler did not end on the refusal\n%s", tail(s.stderr.String()))
	}
	if got := summaries(t, s.stdout.String()); len(got) != 1 || got[0].Sent != 0 {
		t.Fatalf("scheduler ran %d firings (%+v), want one that sent nothing", len(got), got)
	}
	if f.smtp.Total() != 4 {
		t.Fatalf("%d messages, want the first pass's 4 only", f.smtp.Total())
	}
	if e, r := count(); e != e0 || r != r0 {
		t.Fatalf("the refused scheduler wrote: epochs %d -> %d, ledger rows %d -> %d", e0, e, r0, r)
	}
}
