// Command scan sends subscription-renewal notices exactly when policy
// allows and never twice. README.md is its operator contract: commands,
// configuration, summary line and exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	// The IANA zones, embedded: the image is static and a fresh host may
	// have no /usr/share/zoneinfo, yet every recipient's time_zone and the
	// policy's default_time_zone must load.
	_ "time/tzdata"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
