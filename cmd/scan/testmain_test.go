package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/notice"
	"scan/internal/pgtest"
	"scan/internal/scan"
	"scan/internal/smtptest"
	"scan/sql/reference"
)

// TestMain gives every test of this package a PostgreSQL server (the one
// of TEST_DATABASE_URL, or a throwaway devpg server). The scan binary that
// the crash tests run as a child process is built on first use; see
// scanBinary.
func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	testSecret   = "crash-test-secret-0123456789abcdef0123"
	testKind     = "renewal_notice_t72"
	testMsgIDDom = "n.example.com"
	// testPolicy has rates high enough never to pace the tests; small
	// batches (--batch-size) make several claims per pass.
	testPolicy = `
schedule: "0 2 * * *"
message_id_domain: n.example.com
from: "Example Box <notices@example.com>"
notices:
  - kind: renewal_notice_t72
    open_before: 72h
    close_before: 24h
rate:
  default: {per_second: 100000, burst: 10000}
  global: {per_second: 100000, burst: 10000}
concurrency: 8
`
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// scanBinary returns the path of the scan binary built with -tags
// failpoint (SCAN_FAILPOINT crashes it at a pass boundary), building it
// the first time. It is written next to the test binary, in go test's work
// directory, which go test removes afterwards.
func scanBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir := filepath.Dir(os.Args[0])
		if f, err := os.CreateTemp(dir, ".probe"); err == nil {
			f.Close()
			os.Remove(f.Name())
		} else if dir, err = os.MkdirTemp("", "scan-failpoint-"); err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "scan-failpoint")
		goTool, err := exec.LookPath("go")
		if err != nil && os.Getenv("GOROOT") != "" {
			goTool, err = filepath.Join(os.Getenv("GOROOT"), "bin", "go"), nil
		}
		if err != nil {
			buildErr = fmt.Errorf("the crash tests build the binary with the go command, which is not on PATH: %w", err)
			return
		}
		// The child needs no race detector: the races that matter are
		// between processes, and the test process runs with -race.
		// Stamped as the Dockerfile stamps a release (TestVersionStamped).
		cmd := exec.Command(goTool, "build", "-tags", "failpoint", "-ldflags", stampedLdflags, "-o", binPath, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build -tags failpoint: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// fixture is one test's world: a schema with the ledger and the reference
// subscriptions table, a policy file, and an SMTP server whose every
// message can be observed (OnMessage) as it arrives, before its reply.
type fixture struct {
	t      *testing.T
	dsn    string
	db     *sqlx.DB
	smtp   *smtptest.Server
	policy string
	renews time.Time // renews_at of every subscription: inside the window now
	onMsg  atomic.Pointer[func(smtptest.Received)]
	subs   int
}

// newFixture sets up a fresh pgtest schema (or the database of dsn when
// given) with n due subscriptions.
func newFixture(t *testing.T, n int, dsn string, opts ...smtptest.Option) *fixture {
	t.Helper()
	f := &fixture{t: t}
	if dsn == "" {
		dsn = pgtest.DSN(t)
	}
	f.dsn = dsn
	f.db = pgtest.Open(t, dsn)
	ctx := context.Background()
	if _, err := ledger.Migrate(ctx, f.db.DB); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.ExecContext(ctx, reference.Subscriptions); err != nil {
		t.Fatal(err)
	}
	f.policy = filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(f.policy, []byte(testPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	f.smtp = smtptest.New(t, append(opts, smtptest.OnMessage(func(r smtptest.Received) {
		if fn := f.onMsg.Load(); fn != nil {
			(*fn)(r)
		}
	}))...)
	// Due now (72h..24h before renews_at) and for the next day, whatever
	// the test's duration.
	f.renews = time.Now().UTC().Add(60 * time.Hour).Truncate(time.Second)
	f.add(n)
	return f
}

// onMessage sets the function called for each message the SMTP server
// reads, on its connection goroutine, before it replies; nil removes it.
func (f *fixture) onMessage(fn func(smtptest.Received)) {
	if fn == nil {
		f.onMsg.Store(nil)
		return
	}
	f.onMsg.Store(&fn)
}

// add inserts n more due subscriptions, spread over four domains.
func (f *fixture) add(n int) {
	f.t.Helper()
	if n == 0 {
		return
	}
	_, err := f.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start, name)
		SELECT 'sub_' || lpad(i::text, 6, '0'), 'user' || i || '@' || (ARRAY['example.com','example.net','example.org','mail.test'])[1 + i % 4],
		       $3::timestamptz, $4::date, 'User ' || i
		FROM generate_series($1::int, $2::int) i`, f.subs+1, f.subs+n, f.renews, f.periodStart())
	if err != nil {
		f.t.Fatal(err)
	}
	f.subs += n
}

func (f *fixture) periodStart() string { return f.renews.Format(notice.DateLayout) }

func subID(i int) string { return fmt.Sprintf("sub_%06d", i) }

// key derives a subscription's notice key as the contract defines it,
// independently of the ledger.
func (f *fixture) key(id string, rev int, secret string) string {
	k, err := notice.NewKeyer([]byte(secret))
	if err != nil {
		f.t.Fatal(err)
	}
	ps, _ := time.Parse(notice.DateLayout, f.periodStart())
	return k.Key(notice.Tuple{SubscriptionID: id, PeriodStart: ps, Kind: testKind, Revision: rev})
}

// msgID is the Message-ID (without brackets) of a subscription's notice.
func (f *fixture) msgID(id string) string {
	return notice.MessageID(f.key(id, 0, testSecret), testMsgIDDom)
}

// env is the child's environment; later entries override earlier ones.
func (f *fixture) env(extra ...string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + f.dsn,
		"NOTICE_KEY_SECRET=" + testSecret,
		"SCAN_CONFIG=" + f.policy,
		"SCAN_SENDER=smtp",
		"SMTP_URL=" + f.smtp.URL(),
		"LOG_LEVEL=info",
		"USER=crash-test",
	}, extra...)
}

// getenv is env as run's getenv, for in-process runs.
func (f *fixture) getenv(extra ...string) func(string) string {
	m := map[string]string{}
	for _, kv := range f.env(extra...) {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// child is one scan process.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	cancel         context.CancelFunc
}

// result is how a child ended.
type result struct {
	code   int  // exit code; -1 when a signal ended it
	killed bool // ended by SIGKILL (a fail point, or the test)
	stdout string
	stderr string
}

// summary decodes the JSON summary `scan run` prints last.
func (r result) summary(t *testing.T) scan.Summary {
	t.Helper()
	var s scan.Summary
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("no summary on stdout (%v): %q\nstderr:\n%s", err, r.stdout, tail(r.stderr))
	}
	return s
}

// start runs the scan binary with env and args. A child still running
// after five minutes is killed (then the test fails on its result).
func (f *fixture) start(env []string, args ...string) *child {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	c := &child{cancel: cancel}
	c.cmd = exec.CommandContext(ctx, scanBinary(f.t), args...)
	c.cmd.Env = env
	c.cmd.Stdout = &c.stdout
	c.cmd.Stderr = &c.stderr
	c.cmd.WaitDelay = 10 * time.Second
	if err := c.cmd.Start(); err != nil {
		cancel()
		f.t.Fatal(err)
	}
	return c
}

// kill sends SIGKILL; safe to call from any goroutine, any number of
// times, also after the child exited.
func (c *child) kill() { _ = c.cmd.Process.Kill() }

func (c *child) wait() result {
	err := c.cmd.Wait()
	c.cancel()
	r := result{code: c.cmd.ProcessState.ExitCode(), stdout: c.stdout.String(), stderr: c.stderr.String()}
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.killed = ws.Signal() == syscall.SIGKILL
	}
	if err != nil && r.code == 0 && !r.killed {
		r.code = -2
	}
	return r
}

// scan runs the binary to its end.
func (f *fixture) scan(env []string, args ...string) result {
	f.t.Helper()
	return f.start(env, args...).wait()
}

// mustRun runs `scan run` to completion and wants exit 0.
func (f *fixture) mustRun(env []string, args ...string) scan.Summary {
	f.t.Helper()
	r := f.scan(env, append([]string{"run", "--batch-size", "20"}, args...)...)
	if r.code != 0 {
		f.t.Fatalf("scan run: exit %d (killed %v)\nstderr:\n%s", r.code, r.killed, tail(r.stderr))
	}
	s := r.summary(f.t)
	if s.Minted+s.Retried != s.Sent+s.Retry+s.Failed+s.Ambiguous {
		f.t.Fatalf("summary does not balance: %+v", s)
	}
	return s
}

// mustCrash runs `scan run` with a fail point and wants it killed there.
func (f *fixture) mustCrash(failpoint string, args ...string) result {
	f.t.Helper()
	r := f.scan(f.env("SCAN_FAILPOINT="+failpoint), append([]string{"run", "--batch-size", "20"}, args...)...)
	if !r.killed {
		f.t.Fatalf("fail point %s did not crash the pass: exit %d\nstderr:\n%s", failpoint, r.code, tail(r.stderr))
	}
	// What left the process before it died is still on its way to the
	// server: count it before anything counts what the server received.
	f.idle()
	return r
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// ledgerRow is what the checks need of a ledger row.
type ledgerRow struct {
	SubscriptionID string       `db:"subscription_id"`
	State          ledger.State `db:"state"`
	MessageID      *string      `db:"message_id"`
	RunID          string       `db:"run_id"`
}

// rows returns the ledger by subscription id (test-only query).
func (f *fixture) rows() map[string]ledgerRow {
	f.t.Helper()
	var rs []ledgerRow
	if err := f.db.Select(&rs, `SELECT subscription_id, state, message_id, run_id FROM notice_ledger`); err != nil {
		f.t.Fatal(err)
	}
	m := make(map[string]ledgerRow, len(rs))
	for _, r := range rs {
		m[r.SubscriptionID] = r
	}
	return m
}

func (f *fixture) counts() map[ledger.State]int {
	f.t.Helper()
	c, err := ledgertest.CountByState(context.Background(), f.db)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// received counts the messages the SMTP server read, by Message-ID.
func (f *fixture) received() map[string]int {
	m := map[string]int{}
	for _, r := range f.smtp.Messages() {
		m[r.MessageID]++
	}
	return m
}

// tally is the state of the world after a run.
type tally struct {
	received    int // messages the SMTP server read
	sent        int // ledger rows sent
	quarantined int // ledger rows claimed (no recorded outcome)
	// quarantinedDelivered are quarantined claims whose message the SMTP
	// server did read: the ones reconcile settles as sent.
	quarantinedDelivered int
	retry                int
}

func (t tally) String() string {
	return fmt.Sprintf("received=%d sent=%d quarantined=%d (delivered %d) retry=%d",
		t.received, t.sent, t.quarantined, t.quarantinedDelivered, t.retry)
}

// check asserts the guarantee: no Message-ID was received twice, every
// received message is one of ours and belongs to a claimed ledger row,
// every sent row was received exactly once, and (final) every subscription
// is either sent or quarantined.
func (f *fixture) check(final bool) tally {
	f.t.Helper()
	got := f.received()
	rows := f.rows()
	byMsg := map[string]ledgerRow{}
	for _, r := range rows {
		if r.MessageID != nil {
			byMsg[*r.MessageID] = r
		}
	}
	var tl tally
	for id, n := range got {
		tl.received += n
		if n > 1 {
			f.t.Errorf("Message-ID %s received %d times", id, n)
		}
		r, ok := byMsg[id]
		if !ok {
			f.t.Errorf("Message-ID %s received but no ledger row has it", id)
			continue
		}
		if r.State != ledger.Sent && r.State != ledger.Claimed {
			f.t.Errorf("Message-ID %s received but its row is %s", id, r.State)
		}
	}
	for i := 1; i <= f.subs; i++ {
		id := subID(i)
		r, ok := rows[id]
		if !ok {
			if final {
				f.t.Errorf("%s: no ledger row after a completed pass", id)
			}
			continue
		}
		if r.MessageID == nil || *r.MessageID != f.msgID(id) {
			f.t.Errorf("%s: ledger Message-ID %v, want %s", id, r.MessageID, f.msgID(id))
			continue
		}
		n := got[*r.MessageID]
		switch r.State {
		case ledger.Sent:
			tl.sent++
			if n != 1 {
				f.t.Errorf("%s: sent in the ledger, received %d times", id, n)
			}
		case ledger.Claimed:
			tl.quarantined++
			if n == 1 {
				tl.quarantinedDelivered++
			}
		case ledger.Retry:
			tl.retry++
			if final {
				f.t.Errorf("%s: retry after a completed pass against a working server", id)
			}
		default:
			f.t.Errorf("%s: state %s", id, r.State)
		}
	}
	return tl
}
