package main

import (
	"strings"
	"testing"
	"time"
)

// A sample goes to the first step whose pattern matches a frame of its
// stack: the compression inside the dispatcher is the kept message's, the
// validation inside the source read is classification, and a stack of
// the runtime alone falls to the last step.
func TestStepTimesAttributeEachSampleOnce(t *testing.T) {
	traces := `File: scan
Type: cpu
-----------+-------------------------------------------------------
      20ms   github.com/klauspost/compress/s2.encodeBlockDictGo
             scan/internal/ledger.KeepMessage
             scan/internal/send.(*Dispatcher).keepOf
             scan/internal/send.(*Dispatcher).worker
-----------+-------------------------------------------------------
      10ms   runtime.concatstrings
             scan/internal/scan.(*Pass).validate
             scan/internal/scan.(*Pass).classify
             scan/internal/scan.(*Pass).readPage
-----------+-------------------------------------------------------
     1.5s   runtime.futex
             runtime.findRunnable
-----------+-------------------------------------------------------
      30ms   internal/runtime/syscall/linux.Syscall6
             scan/internal/send.(*Outbox).writeLinked
             scan/internal/send.(*Dispatcher).worker
`
	steps, total := stepTimes(traces)
	if want := 1560 * time.Millisecond; total != want {
		t.Fatalf("total %v, want %v", total, want)
	}
	want := map[string]time.Duration{
		"kept message: s2 compression (issue 37)":           20 * time.Millisecond,
		"classification + validation":                       10 * time.Millisecond,
		"outbox write (open O_TMPFILE, write, link, close)": 30 * time.Millisecond,
		"Go scheduler, other runtime":                       1500 * time.Millisecond,
	}
	for i, st := range passSteps {
		if steps[i] != want[st.name] {
			t.Errorf("%s: %v, want %v", st.name, steps[i], want[st.name])
		}
	}
}

// The server log's rusage entries are summed by statement and phase: a
// statement of the extended protocol is one call in three phases, a
// simple query one call, and another backend's entries in between do
// not mix with them.
func TestStatementCPUSumsEachPhase(t *testing.T) {
	log := `2026-12-02 08:06:47.355 UTC [6460] LOG:  PARSE MESSAGE STATISTICS
2026-12-02 08:06:47.355 UTC [6460] DETAIL:  ! system usage stats:
	!	0.001000 s user, 0.000500 s system, 0.002 s elapsed
	!	[0.000000 s user, 0.004518 s system total]
2026-12-02 08:06:47.355 UTC [6461] LOG:  QUERY STATISTICS
2026-12-02 08:06:47.355 UTC [6461] DETAIL:  ! system usage stats:
	!	0.000000 s user, 0.000200 s system, 0.0003 s elapsed
2026-12-02 08:06:47.355 UTC [6461] STATEMENT:  COMMIT
2026-12-02 08:06:47.355 UTC [6460] STATEMENT:  UPDATE notice_ledger l
	SET state = o.state
2026-12-02 08:06:47.356 UTC [6460] LOG:  BIND MESSAGE STATISTICS
2026-12-02 08:06:47.356 UTC [6460] DETAIL:  ! system usage stats:
	!	0.006000 s user, 0.000000 s system, 0.006 s elapsed
2026-12-02 08:06:47.356 UTC [6460] STATEMENT:  UPDATE notice_ledger l
	SET state = o.state
2026-12-02 08:06:47.360 UTC [6460] LOG:  EXECUTE MESSAGE STATISTICS
2026-12-02 08:06:47.360 UTC [6460] DETAIL:  ! system usage stats:
	!	0.020000 s user, 0.002000 s system, 0.03 s elapsed
2026-12-02 08:06:47.360 UTC [6460] STATEMENT:  UPDATE notice_ledger l
	SET state = o.state
2026-12-02 08:06:47.361 UTC [6460] LOG:  duration: 0.432 ms  statement: COMMIT
`
	sums, err := statementCPU(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	up := sums["UPDATE notice_ledger l SET state = o.state"]
	if up == nil || up.calls != 1 || !near(up.parse, 0.0015) || !near(up.bind, 0.006) || !near(up.exec, 0.022) {
		t.Errorf("update: %+v", up)
	}
	if c := sums["COMMIT"]; c == nil || c.calls != 1 || !near(c.exec, 0.0002) {
		t.Errorf("commit: %+v", c)
	}
	if len(sums) != 2 {
		t.Errorf("%d statements, want 2", len(sums))
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
