package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/pgtest"
	"scan/sql/reference"
)

// The secrets every configuration test sets; no output may contain them.
const (
	usageSecret = "usage-secret-5c1b9e0f7d2a4e6b8c3f1a9d"
	usageDBPass = "dbpass-Q7m2Zr8w"
	usageSMTPPw = "smtppw-K4x9Vt1c"
)

// scanOutput is what one in-process run of the command printed.
type scanOutput struct {
	code           int
	stdout, stderr string
}

// runInProcess runs the command as main would, with exactly the variables
// in vars as its environment.
func runInProcess(t *testing.T, vars map[string]string, args ...string) scanOutput {
	t.Helper()
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return vars[k] }
	code := run(context.Background(), args, getenv, strings.NewReader(""), &stdout, &stderr)
	return scanOutput{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// assertNoSecret fails when any output contains one of the secrets.
func assertNoSecret(t *testing.T, out scanOutput, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(out.stdout, s) || strings.Contains(out.stderr, s) {
			t.Errorf("output prints the secret %q:\nstdout: %s\nstderr: %s", s, out.stdout, out.stderr)
		}
	}
}

// usageDB is a fresh schema holding the reference subscriptions table and
// one due row, not migrated unless migrate is set. It returns the DSN,
// with a password that the server does not need (trust authentication)
// but that the command must never print.
func usageDB(t *testing.T, migrate bool) string {
	t.Helper()
	dsn := pgtest.DSN(t)
	db := pgtest.Open(t, dsn)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, reference.Subscriptions); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO subscriptions (id, email, renews_at, period_start)
		VALUES ('s1', 'a@example.com', '2026-12-02T02:00:00Z', '2026-12-02')`); err != nil {
		t.Fatal(err)
	}
	if migrate {
		if _, err := ledger.Migrate(ctx, db.DB); err != nil {
			t.Fatal(err)
		}
	}
	return withCredentials(t, dsn, "", usageDBPass)
}

// assertNothingWritten checks that the database holds no ledger (when it
// was not migrated) or an empty ledger (when it was), that the
// subscriptions are untouched, and that the outbox holds no file.
func assertNothingWritten(t *testing.T, dsn string, migrated bool, outbox string) {
	t.Helper()
	db := pgtest.Open(t, dsn)
	var ledgerTable, migrations *string
	if err := db.QueryRow(`SELECT to_regclass('notice_ledger')::text, to_regclass('`+ledger.MigrationTable+`')::text`).Scan(&ledgerTable, &migrations); err != nil {
		t.Fatal(err)
	}
	if !migrated && (ledgerTable != nil || migrations != nil) {
		t.Errorf("the command created the ledger (%v) or ran migrations (%v)", ledgerTable, migrations)
	}
	if migrated {
		counts, err := ledgertest.CountByState(context.Background(), db)
		if err != nil {
			t.Fatalf("ledger damaged: %v", err)
		}
		if len(counts) != 0 {
			t.Errorf("ledger rows written: %v", counts)
		}
	}
	var subs int
	if err := db.QueryRow(`SELECT count(*) FROM subscriptions`).Scan(&subs); err != nil || subs != 1 {
		t.Errorf("subscriptions: %d rows, %v; want the one row untouched", subs, err)
	}
	_ = filepath.WalkDir(outbox, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("outbox file written: %s", path)
		}
		return nil
	})
}

// writePolicy writes a policy file and returns its path.
func writePolicy(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every configuration mistake an operator can make exits 2 with one line
// that names the setting and says how to fix it, writes nothing, and
// prints no secret.
func TestRunConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string // merged over a valid environment; "" unsets
		args []string          // after "run"
		// policy, when set, is written to a file given with --config.
		policy string
		// migrate the database first: for mistakes found only once
		// connected.
		migrate bool
		// want: substrings of the one line, the field first.
		want []string
	}{
		{name: "no secret", env: map[string]string{"NOTICE_KEY_SECRET": ""},
			want: []string{"NOTICE_KEY_SECRET", "required", "at least 32 bytes"}},
		{name: "short secret", env: map[string]string{"NOTICE_KEY_SECRET": "0123456789abcdef"},
			want: []string{"NOTICE_KEY_SECRET", "too short (16 bytes)", "at least 32 bytes"}},
		{name: "no DATABASE_URL", env: map[string]string{"DATABASE_URL": ""},
			want: []string{"DATABASE_URL", "required", "postgres://"}},
		{name: "unparsable DATABASE_URL", env: map[string]string{"DATABASE_URL": "postgres://scan:" + usageDBPass + "@db.internal:port/scan"},
			want: []string{"DATABASE_URL", "cannot parse", "postgres://user:password@host:port/db"}},
		{name: "DATABASE_URL of another database", env: map[string]string{"DATABASE_URL": "mysql://scan:" + usageDBPass + "@db.internal/scan"},
			want: []string{"DATABASE_URL", "not a PostgreSQL URL", "host=... dbname=..."}},
		{name: "DATABASE_URL keyword string unterminated", env: map[string]string{"DATABASE_URL": "host=/tmp dbname=scan password='" + usageDBPass},
			want: []string{"DATABASE_URL", "cannot parse"}},
		{name: "unknown SCAN_SENDER", env: map[string]string{"SCAN_SENDER": "pigeon"},
			want: []string{"SCAN_SENDER", `"pigeon" is not one of outbox, smtp, http`}},
		{name: "unknown --sender", args: []string{"--sender", "pigeon"},
			want: []string{"--sender", `"pigeon" is not one of outbox, smtp, http`}},
		{name: "smtp without SMTP_URL", env: map[string]string{"SCAN_SENDER": "smtp"},
			want: []string{"SMTP_URL", "required with --sender smtp", "smtp://"}},
		{name: "SMTP_URL without a host", env: map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://scan:" + usageSMTPPw + "@:587"},
			want: []string{"SMTP_URL", "needs a host", "smtp://user:pass@mail.example.com:587"}},
		{name: "SMTP_URL empty host", env: map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://"},
			want: []string{"SMTP_URL", "needs a host"}},
		{name: "SMTP_URL with another scheme", env: map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "http://scan:" + usageSMTPPw + "@mail.example.com"},
			want: []string{"SMTP_URL", "smtp:// or smtps://"}},
		{name: "SMTP_URL remote outside production", env: map[string]string{"SCAN_SENDER": "smtp", "SMTP_URL": "smtp://scan:" + usageSMTPPw + "@mail.example.com:587"},
			want: []string{"SMTP_URL", "SCAN_ENVIRONMENT=production", "SCAN_REDIRECT_TO"}},
		{name: "SCAN_HTTP_URL in the clear off loopback", env: map[string]string{"SCAN_SENDER": "http", "SCAN_ENVIRONMENT": "production", "SCAN_HTTP_URL": "http://scan:" + usageSMTPPw + "@api.example.com/notices"},
			want: []string{"SCAN_HTTP_URL", "in the clear", "use https://"}},
		{name: "production with the sample from", env: map[string]string{"SCAN_ENVIRONMENT": "production"},
			want: []string{"policy: from", "is a sample value", "SCAN_CONFIG"}},
		{name: "production with the sample cancel_url", env: map[string]string{"SCAN_ENVIRONMENT": "production"},
			policy: "from: \"Acme <notices@acme.test>\"\nmessage_id_domain: notices.acme.test\n",
			want:   []string{"policy: cancel_url", "https://example.com/cancel", "is a sample value"}},
		{name: "production with the sample message_id_domain", env: map[string]string{"SCAN_ENVIRONMENT": "production"},
			policy: "from: \"Acme <notices@acme.test>\"\ncancel_url: \"https://acme.test/c/{token}\"\nmessage_id_domain: notices.example.com\n",
			want:   []string{"policy: message_id_domain", "notices.example.com", "is a sample value"}},
		{name: "SCAN_HTTP_URL without a host", env: map[string]string{"SCAN_SENDER": "http", "SCAN_HTTP_URL": "https://"},
			want: []string{"SCAN_HTTP_URL", "needs a host"}},
		{name: "policy file missing", args: []string{"--config", "/nonexistent/policy.yaml"},
			want: []string{"policy: config", "no such file"}},
		{name: "policy unknown key", policy: "schedule: \"0 2 * * *\"\nnotices:\n  - kind: k1\n    open_befor: 72h\n    close_before: 24h\nfrobnicate: 1\n",
			want: []string{"policy: config", "line 4: field open_befor not found: unknown key", "line 6: field frobnicate"}},
		{name: "policy through SCAN_CONFIG", env: map[string]string{"SCAN_CONFIG": "/nonexistent/scan-config.yaml"},
			want: []string{"policy: config", "scan-config.yaml"}},
		{name: "zero rate", policy: "rate:\n  default: {per_second: 0, burst: 0}\n",
			want: []string{"policy: rate.default.per_second", "must be a number greater than 0, got 0"}},
		{name: "negative rate", policy: "rate:\n  domains:\n    gmail.com: {per_second: -2, burst: 5}\n",
			want: []string{"policy: rate.domains[gmail.com].per_second", "must be a number greater than 0, got -2"}},
		{name: "zero burst", policy: "rate:\n  global: {per_second: 10, burst: 0}\n",
			want: []string{"policy: rate.global.burst", "at least 1"}},
		{name: "zero concurrency", policy: "concurrency: 0\n",
			want: []string{"policy: concurrency", "between 1 and 1024, got 0"}},
		{name: "bad duration", policy: "notices:\n  - {kind: k1, open_before: 3 days, close_before: 24h}\n",
			want: []string{"policy: config", `line 2: invalid duration "3 days"`, "e.g. 72h or 30d"}},
		{name: "bad cron", policy: "schedule: \"0 25 * * *\"\n",
			want: []string{"policy: schedule", `invalid cron expression "0 25 * * *"`}},
		{name: "window closes before it opens", policy: "notices:\n  - {kind: k1, open_before: 24h, close_before: 72h}\n",
			want: []string{"policy: notices[k1]", "kind k1", "closes before it opens"}},
		{name: "window outside the legal lead", policy: "notices:\n  - kind: k1\n    open_before: 72h\n    close_before: 24h\n    by_jurisdiction: {US-CA: {open_before: 50d, close_before: 16d}}\nlegal: {US-CA: {min_lead: 15d, max_lead: 45d}}\n",
			want: []string{"policy: notices[k1].by_jurisdiction[US-CA]", "jurisdiction US-CA", "outside the legal lead"}},
		{name: "window narrower than the schedule", policy: "schedule: \"0 2 * * 1\"\nnotices:\n  - {kind: k1, open_before: 72h, close_before: 24h}\n",
			want: []string{"policy: notices[k1]", "widen the window or run more often"}},
		{name: "rate domain not in ASCII form", policy: "rate:\n  domains:\n    bücher.example: {per_second: 1, burst: 1}\n",
			want: []string{"policy: rate.domains[bücher.example]", `"xn--bcher-kva.example"`}},
		{name: "shard index past the count", args: []string{"--shard", "3/2"},
			want: []string{"--shard", `"3/2" is not a shard I/N with 0 <= I < N`}},
		{name: "shard not a fraction", args: []string{"--shard", "half"},
			want: []string{"--shard", "e.g. 0/4"}},
		{name: "completion index past the count", env: map[string]string{"JOB_COMPLETION_INDEX": "4"}, args: []string{"--shards", "4"},
			want: []string{"JOB_COMPLETION_INDEX", `"4" is not a shard index below --shards=4`}},
		{name: "unknown flag", args: []string{"--frobnicate"},
			want: []string{"flags", "unknown flag: --frobnicate", "scan run --help"}},
		{name: "flag without its value", args: []string{"--max-mint", "many"},
			want: []string{"--max-mint", `"many" is not a whole number`, "scan run --help"}},
		{name: "argument", args: []string{"now"},
			want: []string{"arguments", `run takes no arguments, got "now"`}},
		{name: "batch size", args: []string{"--batch-size", "0"},
			want: []string{"--batch-size", "between 1 and 10000"}},
		{name: "bad --max-duration", args: []string{"--max-duration", "soon"},
			want: []string{"--max-duration", `"soon" is not a positive duration`}},
		{name: "zero --max-duration", args: []string{"--max-duration", "0s"},
			want: []string{"--max-duration", `"0s" is not a positive duration`}},
		{name: "bad SCAN_MAX_DURATION", env: map[string]string{"SCAN_MAX_DURATION": "-5m"},
			want: []string{"SCAN_MAX_DURATION", `"-5m" is not a positive duration`}},
		{name: "bad LOG_LEVEL", env: map[string]string{"LOG_LEVEL": "verbose"},
			want: []string{"LOG_LEVEL", `"verbose" is not one of debug, info, warn, error`}},
		{name: "bad --now", args: []string{"--now", "2026-11-30 02:00"},
			want: []string{"--now", "not an RFC3339 instant", "2026-11-30T02:00:00Z"}},
		// Found once connected; still nothing written.
		{name: "unmigrated database", migrate: false, args: []string{"--now", "2026-11-30T02:00:00Z"},
			want: []string{"database", "notice_ledger", "run `scan migrate` first"}},
		{name: "bad SCAN_REDIRECT_TO", migrate: true, env: map[string]string{"SCAN_REDIRECT_TO": "qa at example.com"},
			want: []string{"SCAN_REDIRECT_TO", "not a valid address"}},
		{name: "source that does not exist", migrate: true, args: []string{"--source", "billing.subs"},
			want: []string{"source", `"billing"."subs" does not exist`}},
		{name: "source with three parts", migrate: true, args: []string{"--source", "a.b.c"},
			want: []string{"--source", "at most schema.relation"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dsn := usageDB(t, tc.migrate)
			outbox := filepath.Join(t.TempDir(), "outbox")
			vars := map[string]string{
				"DATABASE_URL":      dsn,
				"NOTICE_KEY_SECRET": usageSecret,
				"SCAN_OUTBOX_DIR":   outbox,
			}
			for k, v := range tc.env {
				vars[k] = v
			}
			args := append([]string{"run"}, tc.args...)
			if tc.policy != "" {
				args = append(args, "--config", writePolicy(t, tc.policy))
			}
			out := runInProcess(t, vars, args...)
			if out.code != exitUsage {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", out.code, exitUsage, out.stdout, out.stderr)
			}
			if out.stdout != "" {
				t.Errorf("stdout = %q, want nothing", out.stdout)
			}
			line, rest, _ := strings.Cut(out.stderr, "\n")
			if rest != "" || !strings.HasSuffix(out.stderr, "\n") {
				t.Errorf("stderr is not one line:\n%s", out.stderr)
			}
			if !strings.HasPrefix(line, "scan: "+tc.want[0]) {
				t.Errorf("stderr %q does not start with the field %q", line, tc.want[0])
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("stderr %q does not say %q", line, w)
				}
			}
			assertNoSecret(t, out, usageSecret, usageDBPass, usageSMTPPw)
			assertNothingWritten(t, dsn, tc.migrate, outbox)
		})
	}
}

// The subcommands that take flags report a bad one in one line too, and
// -h prints the help on stdout (exit 0), so that `scan run -h | less` shows it.
func TestFlagErrorsAreOneLine(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"NOTICE_KEY_SECRET": usageSecret}
	for _, args := range [][]string{
		{"migrate", "--force"},
		{"lookup", "--color", "s1"},
		{"quarantine", "--older-than", "soon"},
		{"resolve", "--sent"},
		{"reconcile", "--file", "x"},
		{"backfill"},
		{"schedule", "--cron"},
		{"key", "--subscription", "s1", "--period-start", "2026-13-01", "--kind", "k"},
		{"frobnicate"},
	} {
		out := runInProcess(t, vars, args...)
		if out.code != exitUsage || strings.Count(out.stderr, "\n") != 1 || !strings.HasPrefix(out.stderr, "scan: ") {
			t.Errorf("scan %s: exit %d, stderr:\n%s", strings.Join(args, " "), out.code, out.stderr)
		}
		assertNoSecret(t, out, usageSecret)
	}
	out := runInProcess(t, vars, "run", "-h")
	if out.code != exitOK || !strings.Contains(out.stdout, "scan run [flags]") || !strings.Contains(out.stdout, "--max-mint") || out.stderr != "" {
		t.Errorf("run -h: exit %d, stdout:\n%s\nstderr:\n%s", out.code, out.stdout, out.stderr)
	}
}

// --source is quoted as an identifier: an attempt at SQL injection names a
// relation that does not exist, is refused before anything is written,
// and the ledger (with its rows) survives.
func TestSourceInjectionIsRefused(t *testing.T) {
	t.Parallel()
	dsn := usageDB(t, true)
	db := pgtest.Open(t, dsn)
	if _, err := db.Exec(`INSERT INTO notice_ledger (notice_key, subscription_id, kind, period_start, revision, state, claimed_at, attempts, run_id)
		VALUES (repeat('a', 64), 'old', 'renewal_notice_t72', '2025-12-02', 0, 'sent', '2025-11-30T02:00:00Z', 1, 'earlier')`); err != nil {
		t.Fatal(err)
	}
	outbox := filepath.Join(t.TempDir(), "outbox")
	for _, src := range []string{
		"subscriptions; DROP TABLE notice_ledger",
		`subscriptions"; DROP TABLE notice_ledger; --`,
		"subscriptions s; DELETE FROM notice_ledger",
		"(SELECT * FROM subscriptions)",
		"public.subscriptions; DROP TABLE notice_ledger",
	} {
		out := runInProcess(t, map[string]string{"DATABASE_URL": dsn, "NOTICE_KEY_SECRET": usageSecret, "SCAN_OUTBOX_DIR": outbox},
			"run", "--source", src, "--now", "2026-11-30T02:00:00Z")
		if out.code != exitUsage || strings.Count(out.stderr, "\n") != 1 || !strings.Contains(out.stderr, "scan: source: relation") {
			t.Errorf("--source %q: exit %d, stderr:\n%s", src, out.code, out.stderr)
		}
		assertNoSecret(t, out, usageSecret, usageDBPass)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM notice_ledger`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("ledger after the injection attempts: %d rows, %v; want the 1 row intact", n, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM subscriptions`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("subscriptions after the injection attempts: %d rows, %v", n, err)
	}
}

// A source relation without a required column fails at start-up, exit 2,
// naming the column, before anything is claimed.
func TestSourceMissingColumnFailsAtStartup(t *testing.T) {
	t.Parallel()
	for _, col := range []string{"email", "renews_at", "period_start", "jurisdiction", "notice_revision", "status", "id"} {
		t.Run(col, func(t *testing.T) {
			t.Parallel()
			dsn := usageDB(t, true)
			db := pgtest.Open(t, dsn)
			var cols []string
			for _, c := range []string{"id", "email", "status", "renews_at", "period_start", "jurisdiction", "notice_revision"} {
				if c != col {
					cols = append(cols, c)
				}
			}
			if _, err := db.Exec(`CREATE VIEW partial AS SELECT ` + strings.Join(cols, ", ") + ` FROM subscriptions`); err != nil {
				t.Fatal(err)
			}
			outbox := filepath.Join(t.TempDir(), "outbox")
			out := runInProcess(t, map[string]string{"DATABASE_URL": dsn, "NOTICE_KEY_SECRET": usageSecret, "SCAN_OUTBOX_DIR": outbox},
				"run", "--source", "partial", "--now", "2026-11-30T02:00:00Z")
			if out.code != exitUsage || strings.Count(out.stderr, "\n") != 1 || !strings.Contains(out.stderr, `has no column "`+col+`"`) {
				t.Fatalf("exit %d, stderr:\n%s", out.code, out.stderr)
			}
			assertNothingWritten(t, dsn, true, outbox)
		})
	}
}
