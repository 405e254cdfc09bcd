package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"scan/internal/pgtest"
)

// stampedLdflags is how scanBinary builds the binary, as the Dockerfile
// builds a release.
const stampedLdflags = "-X main.version=v9.8.7 -X main.commit=0123456789abcdef -X main.buildTime=2026-11-30T01:02:03Z"

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
		if got := buildOf(tc.ver, tc.rev, tc.at, tc.bi).String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A binary built with -ldflags reports them, under both spellings.
func TestVersionStamped(t *testing.T) {
	t.Parallel()
	bin := scanBinary(t)
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("scan %s: %v", arg, err)
		}
		if want := "scan v9.8.7 (commit 0123456789abcdef, built 2026-11-30T01:02:03Z, go"; !strings.HasPrefix(string(out), want) {
			t.Errorf("scan %s = %q, want it to start with %q", arg, out, want)
		}
	}
}

// The first log line of a command says which build wrote it.
func TestFirstLogLineCarriesVersion(t *testing.T) {
	t.Parallel()
	out := runInProcess(t, map[string]string{"DATABASE_URL": pgtest.DSN(t)}, "migrate")
	if out.code != 0 {
		t.Fatalf("migrate: exit %d\n%s", out.code, out.stderr)
	}
	first, _, _ := bytes.Cut([]byte(out.stderr), []byte("\n"))
	var line map[string]any
	if err := json.Unmarshal(first, &line); err != nil {
		t.Fatalf("first log line %q: %v", first, err)
	}
	if v, _ := line["version"].(string); v == "" || v != thisBuild().Version {
		t.Errorf("first log line %s: version = %v, want %q", first, line["version"], thisBuild().Version)
	}
}

// The image is stamped: the Dockerfile passes every -X that thisBuild
// reads.
func TestDockerfileStampsVersion(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []string{"-X main.version=${VERSION}", "-X main.commit=${COMMIT}", "-X main.buildTime=${BUILD_TIME}"} {
		if !bytes.Contains(b, []byte(x)) {
			t.Errorf("Dockerfile does not pass %s to go build", x)
		}
	}
}
