package buildinfo_test

import (
	"runtime/debug"
	"testing"

	"scan/internal/buildinfo"
)

func TestBuildOf(t *testing.T) {
	t.Parallel()
	vcs := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "scan", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-01T00:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name         string
		ver, rev, at string
		bi           *debug.BuildInfo
		want         string
	}{
		{"ldflags win", "v2.0.0", "fedcba", "2026-11-30T00:00:00Z", vcs, "scan v2.0.0 (commit fedcba, built 2026-11-30T00:00:00Z, go1.26.1)"},
		{"build info", "", "", "", vcs, "scan v1.2.3 (commit abc123-dirty, built 2026-11-01T00:00:00Z, go1.26.1)"},
		{"work tree without VCS", "", "", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}}, "scan (devel) (commit unknown, built unknown, go1.26.1)"},
		{"nothing", "", "", "", nil, "scan unknown (commit unknown, built unknown, unknown)"},
	} {
		if got := buildinfo.Of(tc.ver, tc.rev, tc.at, tc.bi).String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
