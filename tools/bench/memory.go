package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// memPeak is what a child's resident memory was made of at its peak,
// sampled from /proc/PID/status every memSampleEvery while it ran, in KiB.
// getrusage's ru_maxrss gives the peak itself exactly; the samples say how
// much of it was the process's own (anonymous: heap, stacks, runtime
// metadata) and how much the pages of the binary and other files it maps
// (file-backed: text and read-only data the kernel faulted in, which the
// Go runtime does not manage and which the kernel may drop under pressure).
type memPeak struct {
	anon   int64         // most RssAnon seen
	file   int64         // most RssFile seen
	anonAt time.Duration // when anon peaked, since the start
	n      int           // samples taken
}

// memSampleEvery is the sampling period: a peak shorter than this may be
// missed by anon and file, never by maxRSS.
const memSampleEvery = 20 * time.Millisecond

// String reads e.g. "anon 44.1 MiB at 3.2 s, file 19.7 MiB".
func (m memPeak) String() string {
	if m.n == 0 {
		return "anon/file not sampled"
	}
	return fmt.Sprintf("anon %.1f MiB at %.1f s, file %.1f MiB", float64(m.anon)/1024, m.anonAt.Seconds(), float64(m.file)/1024)
}

// sampleMemory samples pid's RssAnon and RssFile into m until the
// returned stop is called; stop waits for the sampler, after which m may
// be read.
func sampleMemory(pid int, start time.Time, m *memPeak) (stop func()) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(memSampleEvery)
		defer t.Stop()
		for {
			if raw, err := os.ReadFile(path); err == nil {
				anon, okA := statusKiB(raw, "RssAnon:")
				file, okF := statusKiB(raw, "RssFile:")
				if okA && okF {
					m.n++
					if anon > m.anon {
						m.anon, m.anonAt = anon, time.Since(start)
					}
					m.file = max(m.file, file)
				}
			}
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(quit); <-done }
}

// statusKiB returns the value of a "Name:   123 kB" line of
// /proc/PID/status.
func statusKiB(status []byte, name string) (int64, bool) {
	i := bytes.Index(status, []byte("\n"+name))
	if i < 0 {
		return 0, false
	}
	line := status[i+1+len(name):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	v, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(line), []byte(" kB"))), 10, 64)
	return v, err == nil
}
