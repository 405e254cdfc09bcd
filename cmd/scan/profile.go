package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile writes a CPU profile of the command to the file named by
// SCAN_CPUPROFILE, for benchmarks (docs/BENCHMARKS.md); it is not among
// the settings docs/configuration.md's table promises operators. The
// returned stop flushes and closes the profile; it does nothing when the
// variable is unset.
func startCPUProfile(e *env) (stop func(), err error) {
	path := e.getenv("SCAN_CPUPROFILE")
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("SCAN_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("SCAN_CPUPROFILE: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
