package observe

import (
	"os"
	"runtime/pprof"
)

// StartCPUProfile writes a CPU profile of the process to the file path,
// for benchmarks (docs/BENCHMARKS.md; `scan run` and `scan receive` take
// the path from SCAN_CPUPROFILE, which is not among the settings
// docs/configuration.md's table promises operators). The returned stop
// flushes and closes the profile; with an empty path it does nothing.
// One profile runs at a time in a process.
func StartCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
