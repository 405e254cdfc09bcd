// Command scan sends subscription-renewal notices exactly when policy
// allows and never twice. README.md and docs/ are its operator contract: commands,
// configuration, summary line and exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"scan/internal/memory"

	// The IANA zones, embedded: the image is static and a fresh host may
	// have no /usr/share/zoneinfo, yet every recipient's time_zone and the
	// policy's default_time_zone must load.
	_ "time/tzdata"
)

func main() {
	// No heap profile is ever read from this process (SCAN_CPUPROFILE is
	// a CPU profile): stop the heap profiler's sampling before the pass
	// allocates. The pass then walks no stack per sampled allocation (one
	// in 512 KiB, 70 frames deep under the AWS SDK) and adds no buckets.
	// Its hash table (1.4 MiB reserved, a few pages touched) is already
	// there: package initialisation allocates more than 512 KiB, and
	// importing runtime/pprof keeps the profiler linked in.
	runtime.MemProfileRate = 0
	// Before the pass allocates: a container's memory limit bounds the
	// runtime's (GOMEMLIMIT, set by an operator, wins). A failure to read
	// the cgroup leaves the runtime's default; the pass does not depend on it.
	_, _ = memory.SetLimit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
