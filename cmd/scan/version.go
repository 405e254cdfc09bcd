package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"scan/internal/buildinfo"

	"github.com/spf13/pflag"
)

// Set at build time, e.g. by the Dockerfile:
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=$(git rev-parse HEAD) -X main.buildTime=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
//
// Empty ones are taken from the module and VCS information that the Go
// toolchain embeds (runtime/debug.ReadBuildInfo).
var (
	version   string
	commit    string
	buildTime string
)

// thisBuild returns the running binary's build, from -ldflags where the
// build set them, else from its embedded build information.
func thisBuild() buildinfo.Build {
	bi, _ := debug.ReadBuildInfo() // nil when there is none
	return buildinfo.Of(version, commit, buildTime, bi)
}

var versionCommand = command{use: "version", short: "version, commit and build time (also scan --version)",
	flags: func(*pflag.FlagSet) runFunc { return cmdVersion }}

func cmdVersion(_ context.Context, e *env, _ []string) error {
	_, err := fmt.Fprintln(e.stdout, thisBuild())
	return err
}
