package message_test

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU adds the process's CPU time (user + system, every thread: the
// garbage collector's and the kernel's work included) per op to b's
// results as cpu-ns/op, from the call to the deferred return. Wall time
// (ns/op) counts the time another process takes the CPU; this does not.
//
//	defer reportCPU(b)()
//	for b.Loop() { ... }
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
