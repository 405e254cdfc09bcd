package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"scan/internal/ledger/ledgertest"
)

// statusJSON runs `scan status -o json` and decodes what it printed.
func (f *fixture) statusJSON(wantCode int) map[string]any {
	f.t.Helper()
	code, out, errOut := f.runIn(nil, "status", "-o", "json")
	var m map[string]any
	if code != wantCode || json.Unmarshal([]byte(out), &m) != nil {
		f.t.Fatalf("status -o json: exit %d, want %d\n%s\n%s", code, wantCode, out, errOut)
	}
	return m
}

// After a pass that completed: exit 0, the pass with its counts, and
// nothing that needs a person; -o json parses with the contract's names.
func TestStatusCleanLedgerExitsZero(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, "")
	s, _ := f.passIn(nil)
	code, out, errOut := f.runIn(nil, "status", "-o", "table")
	if code != 0 || !strings.Contains(out, s.RunID) || !strings.Contains(out, "completed") || !strings.Contains(out, "all is well") {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	m := f.statusJSON(0)
	passes := m["last_pass"].([]any)
	p := passes[0].(map[string]any)
	if len(passes) != 1 || p["run_id"] != s.RunID || p["completed"] != true || p["summary"].(map[string]any)["sent"] != 5.0 {
		t.Fatalf("last_pass: %v", passes)
	}
	for _, k := range []string{"quarantine", "retry", "missed_24h", "undelivered_24h", "recovery_needed"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("no %s in %v", k, m)
		}
	}
	if q := m["quarantine"].(map[string]any); q["count"] != 0.0 || q["oldest_claimed_at"] != nil || m["recovery_needed"] != false {
		t.Fatalf("clean ledger: %v", m)
	}
}

// A claim with no outcome for over an hour: exit 1, naming it.
func TestStatusQuarantineOlderThanAnHourExitsOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	ledgertest.Crashed(t, f.db, 2, time.Now().Add(-2*time.Hour))
	code, out, errOut := f.runIn(nil, "status", "-o", "table")
	if code != exitAborted || !strings.Contains(errOut, ledgertest.Key(1)) || !strings.Contains(out, ledgertest.Key(1)) ||
		!strings.Contains(out, "NEEDS A PERSON") {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	if q := f.statusJSON(exitAborted)["quarantine"].(map[string]any); q["count"] != 2.0 || q["oldest_claimed_at"] == nil {
		t.Fatalf("quarantine: %v", q)
	}
}

// A restored or failed-over database (the last pass recorded on another
// timeline): recovery needed, with the `scan recover` line, exit 1; and
// the next pass does refuse with exit 4.
func TestStatusRestoredDatabaseNeedsRecovery(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, "")
	f.passIn(nil)
	f.db.MustExec(`UPDATE notice_ledger_epoch SET timeline = timeline + 1`)
	code, out, errOut := f.runIn(nil, "status", "-o", "table")
	if code != exitAborted || !strings.Contains(out, "scan recover --since ") || !strings.Contains(errOut, "recovery needed") {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	m := f.statusJSON(exitAborted)
	if m["recovery_needed"] != true || !strings.HasPrefix(m["recovery"].(map[string]any)["command"].(string), "scan recover --since ") {
		t.Fatalf("json: %v", m)
	}
	if code, _, errOut := f.runIn(nil, "run", "--batch-size", "20"); code != exitRestored {
		t.Fatalf("the next pass: exit %d, want 4\n%s", code, tail(errOut))
	}
	// That refused pass is now the shard's last, recorded as not completed.
	code, out, errOut = f.runIn(nil, "status", "-o", "table")
	if code != exitAborted || !strings.Contains(errOut, "did not complete") || !strings.Contains(out, "FAILED") {
		t.Fatalf("status after a refused pass: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestStatusBadOutputIsAUsageError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	if code, _, errOut := f.runIn(nil, "status", "-o", "csv"); code != exitUsage || !strings.Contains(errOut, "-o") {
		t.Fatalf("status -o yaml: exit %d\n%s", code, errOut)
	}
}
