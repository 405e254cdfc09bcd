package observe

import (
	"os"
	"path/filepath"
	"testing"
)

// Not parallel: the process has one CPU profiler.
func TestStartCPUProfile(t *testing.T) {
	stop, err := StartCPUProfile("")
	if err != nil {
		t.Fatalf("no path: %v", err)
	}
	stop()
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	if stop, err = StartCPUProfile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := StartCPUProfile(filepath.Join(t.TempDir(), "second.pprof")); err == nil {
		t.Error("a second profile while one runs: no error")
	}
	stop()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Errorf("the profile after stop: %v, %v; want a non-empty file", fi, err)
	}
	if _, err := StartCPUProfile(filepath.Join(t.TempDir(), "missing", "cpu.pprof")); err == nil {
		t.Error("a path in a missing directory: no error")
	}
}
