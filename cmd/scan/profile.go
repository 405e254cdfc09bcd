package main

import (
	"fmt"

	"scan/internal/observe"
)

// startCPUProfile profiles the command to the file SCAN_CPUPROFILE names
// (observe.StartCPUProfile), for benchmarks; stop does nothing without it.
func startCPUProfile(e *env) (stop func(), err error) {
	if stop, err = observe.StartCPUProfile(e.getenv("SCAN_CPUPROFILE")); err != nil {
		return nil, fmt.Errorf("SCAN_CPUPROFILE: %w", err)
	}
	return stop, nil
}
