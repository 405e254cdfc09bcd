package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"scan/internal/pgtest"
)

// stampedLdflags is how scanBinary builds the binary, as the Dockerfile
// builds a release.
const stampedLdflags = "-X main.version=v9.8.7 -X main.commit=0123456789abcdef -X main.buildTime=2026-11-30T01:02:03Z"

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
