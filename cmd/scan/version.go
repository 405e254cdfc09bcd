package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

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

// build describes the running binary.
type build struct {
	Version, Commit, Time, Go string
}

// String is the line `scan version` prints.
func (b build) String() string {
	return fmt.Sprintf("scan %s (commit %s, built %s, %s)", b.Version, b.Commit, b.Time, b.Go)
}

// thisBuild returns the running binary's build, from -ldflags where the
// build set them, else from its embedded build information.
func thisBuild() build {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return buildOf(version, commit, buildTime, bi)
}

// buildOf fills what -ldflags left empty from bi (nil when the binary has
// none), and "unknown" where neither says.
func buildOf(ver, rev, at string, bi *debug.BuildInfo) build {
	b := build{Version: ver, Commit: rev, Time: at}
	if bi != nil {
		b.Go = bi.GoVersion
		if b.Version == "" && bi.Main.Version != "" {
			b.Version = bi.Main.Version // "(devel)" for a build from a work tree
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if b.Commit == "" && settings["vcs.revision"] != "" {
			b.Commit = settings["vcs.revision"]
			if settings["vcs.modified"] == "true" {
				b.Commit += "-dirty"
			}
		}
		if b.Time == "" {
			b.Time = settings["vcs.time"] // the commit's time: the toolchain records no build time
		}
	}
	for _, f := range []*string{&b.Version, &b.Commit, &b.Time, &b.Go} {
		if strings.TrimSpace(*f) == "" {
			*f = "unknown"
		}
	}
	return b
}

var versionCommand = command{use: "version", short: "version, commit and build time (also scan --version)",
	flags: func(*pflag.FlagSet) runFunc { return cmdVersion }}

func cmdVersion(_ context.Context, e *env, _ []string) error {
	_, err := fmt.Fprintln(e.stdout, thisBuild())
	return err
}
