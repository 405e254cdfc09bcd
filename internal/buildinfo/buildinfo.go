// Package buildinfo says which build a binary is: from -ldflags where the
// build stamped them, else from the module and VCS information the Go
// toolchain embeds.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Build describes a binary: its version, commit, build time and Go.
type Build struct {
	Version, Commit, Time, Go string
}

// String is the line `scan version` prints.
func (b Build) String() string {
	return fmt.Sprintf("scan %s (commit %s, built %s, %s)", b.Version, b.Commit, b.Time, b.Go)
}

// Of returns the build stamped by -ldflags (ver, rev, at), filling what
// they left empty from bi (nil when the binary has none), and "unknown"
// where neither says.
func Of(ver, rev, at string, bi *debug.BuildInfo) Build {
	b := Build{Version: ver, Commit: rev, Time: at}
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
