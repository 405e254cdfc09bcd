// Command devpg runs a command against a throwaway PostgreSQL server:
//
//	go run ./tools/devpg [-durable] -- CMD [ARGS...]
//
// It starts a server from the machine's own PostgreSQL binaries in a
// temporary directory (see internal/devpg), runs CMD with DATABASE_URL and
// TEST_DATABASE_URL set to the server's DSN, forwards SIGINT, SIGTERM and
// SIGHUP to CMD, stops the server and exits with CMD's exit code (128+N when
// CMD died of signal N). If devpg itself is killed, the server (SIGQUIT) and
// CMD (SIGTERM) get a parent-death signal; the server's directory is then
// removed by a later devpg run.
//
// When TEST_DATABASE_URL is already set it starts nothing and runs CMD with
// DATABASE_URL set to the same value, so developers can point everything at
// their own server. Exit codes of devpg itself: 1 when the server cannot be
// started (missing binaries print one line saying how to install them), 2 for
// usage errors.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"scan/internal/devpg"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	os.Exit(run(context.Background(), os.Args[1:], os.Environ(), sigs, os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args, environ []string, sigs <-chan os.Signal, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("devpg", flag.ContinueOnError)
	fs.SetOutput(stderr)
	durable := fs.Bool("durable", false, "keep fsync, synchronous_commit and full_page_writes on (for benchmarks)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: devpg [-durable] -- CMD [ARGS...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}

	dsn := lookupEnv(environ, "TEST_DATABASE_URL")
	if dsn != "" {
		fmt.Fprintln(stderr, "devpg: TEST_DATABASE_URL is set; using that server")
	} else {
		srv, err := devpg.Start(ctx, devpg.Config{Durable: *durable})
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer func() {
			if err := srv.Stop(); err != nil {
				fmt.Fprintln(stderr, err)
			}
		}()
		dsn = srv.DSN()
		fmt.Fprintf(stderr, "devpg: PostgreSQL from %s ready at %s\n", srv.BinDir(), dsn)
	}

	select {
	case sig := <-sigs: // interrupted while the server was starting
		if s, ok := sig.(syscall.Signal); ok {
			return 128 + int(s)
		}
		return 1
	default:
	}

	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	// CMD gets SIGTERM if devpg dies (SIGKILL included): its server is
	// gone then. Linux sends it when the forking thread exits, hence the
	// lock until CMD has been reaped.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.Env = setEnv(environ, "DATABASE_URL", dsn)
	cmd.Env = setEnv(cmd.Env, "TEST_DATABASE_URL", dsn)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "devpg: %v\n", err)
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			return exitCode(err, stderr)
		}
	}
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exitErr.ExitCode()
	}
	fmt.Fprintf(stderr, "devpg: %v\n", err)
	return 1
}

func lookupEnv(environ []string, key string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// setEnv returns environ with key set to value, replacing earlier settings.
func setEnv(environ []string, key, value string) []string {
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}
