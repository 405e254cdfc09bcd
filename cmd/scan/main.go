// Command scan sends subscription-renewal notices exactly when policy
// allows and never twice. README.md is its operator contract: commands,
// configuration, summary line and exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	// The IANA zones, embedded: the image is static and a fresh host may
	// have no /usr/share/zoneinfo, yet every recipient's time_zone and the
	// policy's default_time_zone must load.
	_ "time/tzdata"
)

func main() {
	// No heap profile is ever read from this process (SCAN_CPUPROFILE is
	// a CPU profile): turn the heap profiler's sampling off before the
	// pass allocates, which saves its buckets (1.4 MiB at concurrency 256)
	// and the stack walk of every sampled allocation.
	runtime.MemProfileRate = 0
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
