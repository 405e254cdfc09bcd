package main

import (
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
