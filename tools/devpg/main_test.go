package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// environ returns the test's environment without TEST_DATABASE_URL and
// DATABASE_URL, which are set when the tests themselves run under devpg.
func environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TEST_DATABASE_URL=") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func TestStartsServerAndPassesExitCode(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	// The command sees both variables, equal, naming a socket directory,
	// and can connect; its exit code comes back.
	script := `test -n "$DATABASE_URL" && test "$DATABASE_URL" = "$TEST_DATABASE_URL" || exit 10
echo "$DATABASE_URL"; exit 7`
	code := run(context.Background(), []string{"--", "sh", "-c", script}, environ(), nil, nil, &stdout, &stderr)
	if code != 7 {
		t.Fatalf("exit code %d, want 7; stderr:\n%s", code, stderr.String())
	}
	dsn := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(dsn, "host=/") || !strings.Contains(dsn, "user=postgres") {
		t.Errorf("DATABASE_URL = %q", dsn)
	}
	// The server is gone: its directory was removed.
	dir := strings.TrimPrefix(strings.Fields(dsn)[0], "host=")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("server directory %s still there after the command ended (%v)", dir, err)
	}
}

func TestUsesExistingTestDatabaseURL(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	script := `test "$DATABASE_URL" = "host=elsewhere" && test "$TEST_DATABASE_URL" = "host=elsewhere"`
	code := run(context.Background(), []string{"--", "sh", "-c", script},
		environ("TEST_DATABASE_URL=host=elsewhere", "DATABASE_URL=host=production"), nil, nil, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "TEST_DATABASE_URL is set") {
		t.Errorf("stderr %q does not say the existing server is used", stderr.String())
	}
}

func TestForwardsSignals(t *testing.T) {
	t.Parallel()
	sigs := make(chan os.Signal, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		time.Sleep(300 * time.Millisecond)
		sigs <- syscall.SIGTERM
	}()
	// The shell traps TERM and exits 42 from the trap, so a 42 proves the
	// signal reached it.
	script := `trap 'exit 42' TERM; i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; exit 1`
	code := run(context.Background(), []string{"--", "sh", "-c", script},
		environ("TEST_DATABASE_URL=host=elsewhere"), sigs, nil, &stdout, &stderr)
	if code != 42 {
		t.Fatalf("exit code %d, want 42; stderr:\n%s", code, stderr.String())
	}
}

func TestUsage(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), nil, environ(), nil, nil, &stderr, &stderr); code != 2 {
		t.Errorf("no command: exit code %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "usage: devpg") {
		t.Errorf("stderr %q", stderr.String())
	}
}
