package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"scan/internal/pgtest"
	"scan/internal/smtptest"
)

// withCredentials returns dsn (a keyword string or a postgres:// URL)
// with its user (when not empty) and password replaced.
func withCredentials(t *testing.T, dsn, user, pass string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if user == "" {
			user = u.User.Username()
		}
		u.User = url.UserPassword(user, pass)
		return u.String()
	}
	// In a keyword string a later key wins.
	if user != "" {
		dsn += " user=" + user
	}
	return dsn + " password=" + pass
}

// closedPort returns a loopback address on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// panicWriter panics on its first write with a message that holds a
// secret, as a careless fmt.Sprintf deep in a bug might.
type panicWriter struct{ msg string }

func (w panicWriter) Write([]byte) (int, error) { panic(w.msg) }

// A pass that succeeds with every secret set, at debug level: nothing it
// prints, stores in the ledger or sends contains the HMAC secret, the
// database password or the SMTP password.
func TestSecretsNeverPrintedOnSuccess(t *testing.T) {
	t.Parallel()
	dsn := usageDB(t, true)
	srv := smtptest.New(t, smtptest.WithAuth("scan", usageSMTPPw))
	vars := map[string]string{
		"DATABASE_URL":      dsn,
		"NOTICE_KEY_SECRET": usageSecret,
		"SCAN_SENDER":       "smtp",
		"SMTP_URL":          srv.URL(),
		"LOG_LEVEL":         "debug",
	}
	if !strings.Contains(srv.URL(), usageSMTPPw) {
		t.Fatalf("the SMTP URL %s does not carry the password", srv.URL())
	}
	for _, args := range [][]string{
		{"migrate"},
		{"run", "--dry-run", "--now", "2026-11-30T02:00:00Z"},
		{"run", "--now", "2026-11-30T02:00:00Z"},
		{"run", "--now", "2026-11-30T02:00:00Z"},
		{"lookup", "s1"},
		{"quarantine"},
		{"key", "--subscription", "s1", "--period-start", "2026-12-02", "--kind", "renewal_notice_t72"},
	} {
		out := runInProcess(t, vars, args...)
		if out.code != exitOK {
			t.Fatalf("scan %s: exit %d\nstderr: %s", strings.Join(args, " "), out.code, out.stderr)
		}
		assertNoSecret(t, out, usageSecret, usageDBPass, usageSMTPPw)
	}
	if srv.Total() != 1 {
		t.Fatalf("SMTP received %d messages, want 1", srv.Total())
	}
	for _, m := range srv.Messages() {
		for _, s := range []string{usageSecret, usageDBPass, usageSMTPPw} {
			if strings.Contains(string(m.Raw), s) {
				t.Errorf("the message contains the secret %q", s)
			}
		}
	}
	db := pgtest.Open(t, dsn)
	var dump string
	if err := db.QueryRow(`SELECT coalesce(string_agg(row_to_json(l)::text, E'\n'), '') FROM notice_ledger l`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dump, `"state":"sent"`) {
		t.Fatalf("ledger = %s, want the notice sent", dump)
	}
	for _, s := range []string{usageSecret, usageDBPass, usageSMTPPw} {
		if strings.Contains(dump, s) {
			t.Errorf("the ledger stores the secret %q", s)
		}
	}
}

// Failing runs print an error that helps (which host, which stage) but
// never a secret: an unreachable database, a role the server refuses, an
// unreachable SMTP server, refused SMTP credentials, an unreachable HTTP
// endpoint, with passwords in URLs, keyword strings and query strings.
func TestSecretsNeverPrintedOnFailure(t *testing.T) {
	t.Parallel()
	refusedRole := withCredentials(t, pgtest.DSN(t), "nosuchrole", usageDBPass)
	unreachableDB := closedPort(t)
	refusing := smtptest.New(t, smtptest.WithAuth("scan", "the-right-password-1"))
	_, refusingAddr, _ := strings.Cut(refusing.URL(), "@")
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string // in stderr: the error still says what failed
	}{
		{name: "database unreachable, URL", code: exitAborted, want: "connect to the database",
			env: map[string]string{"DATABASE_URL": "postgres://scan:" + usageDBPass + "@" + unreachableDB + "/scan?sslmode=disable"}},
		{name: "database unreachable, password in the query", code: exitAborted, want: "connect to the database",
			env: map[string]string{"DATABASE_URL": "postgres://scan@" + unreachableDB + "/scan?sslmode=disable&password=" + usageDBPass}},
		{name: "database unreachable, keyword string", code: exitAborted, want: "connect to the database",
			env: map[string]string{"DATABASE_URL": "host=127.0.0.1 port=" + strings.Split(unreachableDB, ":")[1] + " dbname=scan sslmode=disable password='" + usageDBPass + "'"}},
		{name: "database refuses the role", code: exitAborted, want: "nosuchrole",
			env: map[string]string{"DATABASE_URL": refusedRole}},
		{name: "database refuses the role, migrate", code: exitAborted, want: "nosuchrole", args: []string{"migrate"},
			env: map[string]string{"DATABASE_URL": refusedRole}},
		{name: "database refuses the role, lookup", code: exitAborted, want: "nosuchrole", args: []string{"lookup", "s1"},
			env: map[string]string{"DATABASE_URL": refusedRole}},
		{name: "SMTP unreachable", code: exitAborted, want: "provider unreachable",
			env: map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://scan:" + usageSMTPPw + "@" + closedPort(t)}},
		{name: "SMTP refuses the credentials", code: exitAborted, want: "refused the credentials",
			env: map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://scan:" + usageSMTPPw + "@" + refusingAddr}},
		{name: "HTTP endpoint unreachable", code: exitAborted, want: "connection refused",
			env: map[string]string{"SCAN_SENDER": "http", "SCAN_HTTP_URL": "http://scan:" + usageSMTPPw + "@" + closedPort(t) + "/notices"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Each case gets its own schema, so that one case's claims
			// never hide another's send.
			dsn := usageDB(t, true)
			vars := map[string]string{
				"DATABASE_URL":      dsn,
				"NOTICE_KEY_SECRET": usageSecret,
				"SCAN_OUTBOX_DIR":   filepath.Join(t.TempDir(), "outbox"),
				"LOG_LEVEL":         "debug",
			}
			for k, v := range tc.env {
				vars[k] = v
			}
			args := tc.args
			if args == nil {
				args = []string{"run", "--now", "2026-11-30T02:00:00Z"}
			}
			out := runInProcess(t, vars, args...)
			if out.code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", out.code, tc.code, out.stdout, out.stderr)
			}
			if !strings.Contains(out.stderr, tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, out.stderr)
			}
			assertNoSecret(t, out, usageSecret, usageDBPass, usageSMTPPw)
		})
	}
	if refusing.Total() != 0 {
		t.Errorf("the server that refused the credentials received %d messages", refusing.Total())
	}
}

// A panic in the command (a bug) is recovered: it exits 1, not the
// runtime's 2 (which the contract reserves for "nothing was written"),
// and its message and stack are printed without the secrets.
func TestPanicIsRedactedAndExitsOne(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		"NOTICE_KEY_SECRET": usageSecret,
		"DATABASE_URL":      "postgres://scan:" + usageDBPass + "@db.internal/scan",
	}
	var stderr strings.Builder
	stdout := panicWriter{msg: fmt.Sprintf("bug: secret %s, dsn %s", usageSecret, vars["DATABASE_URL"])}
	code := run(context.Background(), []string{"key", "--subscription", "s1", "--period-start", "2026-12-02", "--kind", "renewal_notice_t72"},
		func(k string) string { return vars[k] }, strings.NewReader(""), stdout, &stderr)
	if code != exitAborted {
		t.Errorf("exit %d, want %d", code, exitAborted)
	}
	if !strings.Contains(stderr.String(), "internal error") || !strings.Contains(stderr.String(), "bug: secret REDACTED") {
		t.Errorf("stderr does not report the panic:\n%s", stderr.String())
	}
	assertNoSecret(t, scanOutput{stderr: stderr.String()}, usageSecret, usageDBPass)
}
