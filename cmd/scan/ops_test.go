package main

// The operator tools of the contract, through run(...) in-process: the same
// code path as the binary, flags and environment included. Each test has
// its own schema and SMTP server, so they run in parallel.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"scan/internal/devpg"
	"scan/internal/ledger"
	"scan/internal/notice"
	"scan/internal/pgtest"
	"scan/internal/scan"
	"scan/internal/smtptest"
)

// runIn runs the command in-process with the fixture's environment plus
// extra (KEY=VALUE), and returns its exit code, stdout and stderr.
func (f *fixture) runIn(extra []string, args ...string) (int, string, string) {
	f.t.Helper()
	return f.runInWith(extra, "", args...)
}

func (f *fixture) runInWith(extra []string, stdin string, args ...string) (int, string, string) {
	f.t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, f.getenv(extra...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// passIn runs `scan run` in-process and wants exit 0 and a balanced
// summary.
func (f *fixture) passIn(extra []string, args ...string) (scan.Summary, string) {
	f.t.Helper()
	code, out, errOut := f.runIn(extra, append([]string{"run", "--batch-size", "20"}, args...)...)
	if code != 0 {
		f.t.Fatalf("scan run: exit %d\n%s", code, tail(errOut))
	}
	s := result{stdout: out, stderr: errOut}.summary(f.t)
	if s.Minted+s.Retried != s.Sent+s.Retry+s.Failed+s.Ambiguous {
		f.t.Fatalf("summary does not balance: %+v", s)
	}
	return s, errOut
}

// jsonLines decodes every line of out into a new T.
func jsonLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var rs []T
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r T
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// tableStats is what PostgreSQL counted of writes to the schema's tables,
// and their row counts.
type tableStats struct {
	Rel    string `db:"relname"`
	Ins    int64  `db:"n_tup_ins"`
	Upd    int64  `db:"n_tup_upd"`
	Del    int64  `db:"n_tup_del"`
	HotUpd int64  `db:"n_tup_hot_upd"`
	Rows   int64  `db:"rows"`
}

func (f *fixture) tableStats() map[string]tableStats {
	f.t.Helper()
	var ts []tableStats
	if err := f.db.Select(&ts, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd, 0::bigint AS rows
		FROM pg_stat_user_tables WHERE schemaname = current_schema()`); err != nil {
		f.t.Fatal(err)
	}
	m := map[string]tableStats{}
	for _, s := range ts {
		if err := f.db.Get(&s.Rows, fmt.Sprintf(`SELECT count(*) FROM %q`, s.Rel)); err != nil {
			f.t.Fatal(err)
		}
		m[s.Rel] = s
	}
	return m
}

// withParam adds a run-time parameter to a DSN, URL or keyword string.
func withParam(t *testing.T, dsn, k, v string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set(k, v)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " " + k + "=" + devpg.QuoteValue(v)
}

// settle waits until no backend of application_name app is left: a
// backend flushes its statistics before it leaves pg_stat_activity.
func (f *fixture) settle(app string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var n int
		if err := f.db.GetContext(ctx, &n, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app); err != nil {
			f.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			f.t.Fatalf("backends of %s still connected", app)
		case <-tick.C:
		}
	}
}

// `run --dry-run` reports what a pass would do and writes nothing of any
// kind: the statistics PostgreSQL keeps of every insert, update and delete
// on the schema's tables do not move, and it succeeds in a session where
// every transaction is read-only.
func TestDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 50, "")
	app := func(name string) string { return fmt.Sprintf("scan-test-%s-%d", name, time.Now().UnixNano()) }
	pass, dry, fixture := app("pass"), app("dry"), app("fixture")
	// The fixture's own writes go through a session of its own, closed
	// (and so flushed to the statistics) before the first snapshot.
	f.db.Close()
	f.db = pgtest.Open(t, withParam(t, f.dsn, "application_name", fixture))
	s, _ := f.passIn([]string{"DATABASE_URL=" + withParam(t, f.dsn, "application_name", pass)})
	if s.Sent != 50 {
		t.Fatalf("first pass: %+v", s)
	}
	f.add(70)
	if _, err := f.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start) VALUES
		('closed', 'c@example.com', $1, $2), ('bad', 'not-an-address', $3, $2)`,
		time.Now().Add(12*time.Hour), f.periodStart(), f.renews); err != nil {
		t.Fatal(err)
	}
	f.db.Close()
	f.db = pgtest.Open(t, withParam(t, f.dsn, "application_name", app("checker")))
	f.settle(pass)
	f.settle(fixture)
	before := f.tableStats()
	// The ledger's rows are in its monthly partitions.
	var ledgerIns int64
	for rel, s := range before {
		if strings.HasPrefix(rel, "notice_ledger_p") || rel == "notice_ledger_default" {
			ledgerIns += s.Ins
		}
	}
	if ledgerIns < 50 {
		t.Fatalf("the statistics do not show the first pass's 50 claims (%+v): they could not show a write", before)
	}

	want := scan.DryRunSummary{Eligible: 120, Invalid: 1, WouldMint: 70, AlreadyClaimed: 50, WouldMiss: 1}
	for _, dsn := range []string{
		withParam(t, f.dsn, "application_name", dry),
		// Every transaction of this session is read-only: any write fails.
		withParam(t, withParam(t, f.dsn, "application_name", dry), "default_transaction_read_only", "on"),
	} {
		code, out, errOut := f.runIn([]string{"DATABASE_URL=" + dsn}, "run", "--dry-run", "--batch-size", "20")
		if code != 0 {
			t.Fatalf("dry run (%s): exit %d\n%s", dsn, code, errOut)
		}
		var got scan.DryRunSummary
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("dry run output %q: %v", out, err)
		}
		if got != want {
			t.Fatalf("dry run = %+v, want %+v", got, want)
		}
	}
	f.settle(dry)
	after := f.tableStats()
	for rel, b := range before {
		if a := after[rel]; a != b {
			t.Errorf("%s changed during the dry run: before %+v, after %+v", rel, b, a)
		}
	}
	if f.smtp.Total() != 50 {
		t.Fatalf("the dry run sent: SMTP has %d messages", f.smtp.Total())
	}
}

// `run --max-mint N` counts first and refuses, exit 3, nothing claimed or
// sent.
func TestMaxMintRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30, "")
	code, out, errOut := f.runIn(nil, "run", "--max-mint", "10")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "max-mint") || !strings.Contains(errOut, "would_mint") {
		t.Fatalf("stderr does not say why:\n%s", errOut)
	}
	if s := (result{stdout: out}).summary(t); s.Minted != 0 || s.Sent != 0 {
		t.Fatalf("summary = %+v", s)
	}
	if c := f.counts(); len(c) != 0 || f.smtp.Total() != 0 {
		t.Fatalf("refused, yet ledger %v and %d messages", c, f.smtp.Total())
	}
	// The flag keeps its meaning: 0 refuses any mint.
	if code, _, errOut := f.runIn(nil, "run", "--max-mint", "0"); code != 3 || f.smtp.Total() != 0 {
		t.Fatalf("--max-mint 0: exit %d, %d sent, want 3 and nothing\n%s", code, f.smtp.Total(), errOut)
	}
	if s, _ := f.passIn(nil, "--max-mint", "30"); s.Sent != 30 {
		t.Fatalf("within the limit: %+v", s)
	}
}

// A changed NOTICE_KEY_SECRET changes every key, but the business-tuple
// index still knows every notice: the pass sends nothing, even without
// --max-mint, and says clearly that the keys no longer match.
func TestChangedSecretSendsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 40, "")
	f.passIn(nil)
	const other = "a-completely-different-secret-0123456789"
	s, errOut := f.passIn([]string{"NOTICE_KEY_SECRET=" + other})
	if s.Minted != 0 || s.Sent != 0 || s.Suppressed != 40 || !s.KeyMismatch {
		t.Fatalf("pass with a changed secret = %+v", s)
	}
	if f.smtp.Total() != 40 {
		t.Fatalf("SMTP has %d messages, want the first pass's 40", f.smtp.Total())
	}
	found := false
	for _, l := range jsonLines[map[string]any](t, errOut) {
		msg, _ := l["message"].(string)
		if l["level"] == "error" && strings.Contains(msg, "NOTICE_KEY_SECRET does not derive the keys") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no error log line says the keys no longer match:\n%s", errOut)
	}
	if strings.Contains(errOut, other) || strings.Contains(errOut, testSecret) {
		t.Fatal("a secret reached the log")
	}
	// --max-mint 0 agrees: nothing to mint.
	if s, _ := f.passIn([]string{"NOTICE_KEY_SECRET=" + other}, "--max-mint", "0"); s.Minted != 0 {
		t.Fatalf("%+v", s)
	}
}

// Notices whose outcome is unknown (the server took the message and hung
// up) stay claimed: the pass reports the quarantine and since when,
// `quarantine` lists it oldest first, and `reconcile` settles it from the
// provider's events: proof of acceptance -> sent, an explicit rejection
// -> retry (sent again by the next pass); unknown ids and bad lines are
// counted, never fatal.
func TestQuarantineAndReconcile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10, "", smtptest.WithMode(smtptest.CloseAfterData))
	s, errOut := f.passIn(nil)
	if s.Ambiguous != 10 || s.Quarantine != 10 || s.QuarantineSince == nil {
		t.Fatalf("summary = %+v, want 10 ambiguous in quarantine since this pass", s)
	}
	if !logHas(errOut, "quarantine", float64(10)) || !logHas(errOut, "quarantine_since", nil) {
		t.Fatalf("the log does not say how many are quarantined and since when:\n%s", tail(errOut))
	}
	f.smtp.SetMode(smtptest.Accept)

	// Quarantine lists them, oldest first; --older-than filters.
	code, out, _ := f.runIn(nil, "quarantine", "--older-than", "0s")
	rows := jsonLines[ledger.Row](t, out)
	if code != 0 || len(rows) != 10 {
		t.Fatalf("quarantine: exit %d, %d rows", code, len(rows))
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].ClaimedAt.Before(rows[i-1].ClaimedAt) {
			t.Fatal("quarantine is not oldest first")
		}
	}
	if code, out, _ := f.runIn(nil, "quarantine"); code != 0 || strings.TrimSpace(out) != "" {
		t.Fatalf("quarantine --older-than 15m (default) lists claims made seconds ago: %q", out)
	}

	id := func(i int) string { return f.msgID(subID(i)) }
	events := strings.Join([]string{
		fmt.Sprintf(`{"message_id":%q,"event":"delivered","timestamp":"2026-11-30T02:00:01Z"}`, id(1)),
		fmt.Sprintf(`{"message_id":"<%s>","event":"bounced"}`, id(2)),
		fmt.Sprintf(`{"message_id":%q,"event":"rejected"}`, id(3)),
		fmt.Sprintf(`{"message_id":%q,"event":"dropped"}`, id(4)),
		fmt.Sprintf(`{"message_id":%q,"event":"opened"}`, id(5)),
		fmt.Sprintf(`{"message_id":%q,"event":"rejected"}`, id(5)), // too late: the first settled it
		fmt.Sprintf(`{"message_id":%q,"event":"deferred"}`, id(6)),
		fmt.Sprintf(`{"message_id":%q,"event":"complained"}`, id(7)),
		fmt.Sprintf(`{"message_id":%q,"event":"accepted","extra":{"nested":[1,2]}}`, id(8)),
		fmt.Sprintf(`{"message_id":%q,"event":"unsubscribed"}`, id(9)), // proves nothing
		fmt.Sprintf(`{"message_id":%q,"event":"delivered","timestamp":1796000000}`, id(10)),
		`{"message_id":"<0123456789abcdef0123456789abcdef@n.example.com>","event":"delivered"}`,
		`{"event":"delivered"}`,
		`{not json`,
		``,
		`[1,2,3]`,
	}, "\n")
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = f.runIn(nil, "reconcile", "--events", path)
	if code != 0 {
		t.Fatalf("reconcile: exit %d\n%s", code, errOut)
	}
	lines := jsonLines[map[string]any](t, out)
	changes, sum := lines[:len(lines)-1], lines[len(lines)-1]
	want := map[string]any{"lines": float64(15), "settled": float64(9), "unknown_message_id": float64(1),
		"already_settled": float64(1), "malformed": float64(3), "irrelevant": float64(1), "oversized": float64(0)}
	for k, v := range want {
		if sum[k] != v {
			t.Errorf("reconcile %s = %v, want %v (summary %v)", k, sum[k], v, sum)
		}
	}
	if len(changes) != 9 {
		t.Fatalf("reconcile printed %d changes, want 9:\n%s", len(changes), out)
	}
	for _, n := range []string{"line 13", "line 14", "line 16"} {
		if !strings.Contains(errOut, n) {
			t.Errorf("stderr does not name %s:\n%s", n, errOut)
		}
	}
	wantState := map[int]ledger.State{1: ledger.Sent, 2: ledger.Sent, 3: ledger.Retry, 4: ledger.Retry, 5: ledger.Sent,
		6: ledger.Sent, 7: ledger.Sent, 8: ledger.Sent, 9: ledger.Claimed, 10: ledger.Sent}
	got := f.rows()
	for i, st := range wantState {
		if got[subID(i)].State != st {
			t.Errorf("%s: %s, want %s", subID(i), got[subID(i)].State, st)
		}
	}
	var audit []struct {
		By     string `db:"resolved_by"`
		Reason string `db:"reason"`
	}
	if err := f.db.Select(&audit, `SELECT resolved_by, reason FROM notice_ledger_resolution ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if len(audit) != 9 || audit[0].By != "reconcile" || audit[0].Reason != "provider event delivered" {
		t.Fatalf("audit trail = %+v", audit)
	}

	// The same events again change nothing.
	code, out, _ = f.runIn(nil, "reconcile", "--events", path)
	if lines := jsonLines[map[string]any](t, out); code != 0 || len(lines) != 1 || lines[0]["settled"] != float64(0) {
		t.Fatalf("second reconcile: exit %d\n%s", code, out)
	}

	// The next pass sends the two the provider rejected, and nothing else.
	s, _ = f.passIn(nil)
	if s.Retried != 2 || s.Sent != 2 || s.Minted != 0 || s.Quarantine != 1 {
		t.Fatalf("pass after reconcile = %+v", s)
	}
	rec := f.received()
	for i := 1; i <= 10; i++ {
		want := 1
		if i == 3 || i == 4 {
			want = 2 // rejected by the provider, sent again on that evidence
		}
		if rec[id(i)] != want {
			t.Errorf("%s received %d times, want %d", subID(i), rec[id(i)], want)
		}
	}
}

// `quarantine [--older-than D] [--limit N]`: claims with no outcome
// claimed more than D ago (default 15m), oldest first, as JSON lines.
func TestQuarantineOlderThan(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, "")
	now := time.Now().UTC()
	ps, _ := time.Parse("2006-01-02", f.periodStart())
	ages := map[int]time.Duration{1: 3 * time.Hour, 2: time.Hour, 3: 5 * time.Minute}
	for i, age := range ages {
		id := subID(i)
		opt := ledger.ClaimOptions{State: ledger.Claimed, Now: now.Add(-age), RunID: "crashed-run"}
		c := ledger.Claim{Key: f.key(id, 0, testSecret), Tuple: notice.Tuple{SubscriptionID: id, Kind: testKind, PeriodStart: ps},
			RenewsAt: f.renews, WindowClosesAt: f.renews.Add(-24 * time.Hour), Domain: "example.com", MessageID: f.msgID(id)}
		if won, err := ledger.Insert(context.Background(), f.db, opt, []ledger.Claim{c}); err != nil || len(won) != 1 {
			t.Fatalf("claim %s: %v %v", id, won, err)
		}
	}
	list := func(args ...string) []string {
		t.Helper()
		code, out, errOut := f.runIn(nil, append([]string{"quarantine"}, args...)...)
		if code != 0 {
			t.Fatalf("quarantine %v: exit %d\n%s", args, code, errOut)
		}
		var ids []string
		for _, r := range jsonLines[ledger.Row](t, out) {
			if r.State != ledger.Claimed {
				t.Fatalf("quarantine lists a %s row", r.State)
			}
			ids = append(ids, r.SubscriptionID)
		}
		return ids
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "[sub_000001 sub_000002]"},
		{[]string{"--older-than", "2h"}, "[sub_000001]"},
		{[]string{"--older-than", "0s"}, "[sub_000001 sub_000002 sub_000003]"},
		{[]string{"--older-than", "0s", "--limit", "2"}, "[sub_000001 sub_000002]"},
		{[]string{"--older-than", "4h"}, "[]"},
	} {
		if got := fmt.Sprint(list(c.args...)); got != c.want {
			t.Errorf("quarantine %v = %s, want %s", c.args, got, c.want)
		}
	}
	// A list cut at --limit says so, with the total, on stderr; a list
	// that fits says nothing.
	if _, _, errOut := f.runIn(nil, "quarantine", "--older-than", "0s", "--limit", "2"); !strings.Contains(errOut, "--limit 2") || !strings.Contains(errOut, "oldest 2 of 3 claims") {
		t.Errorf("quarantine --limit 2 of 3: stderr %q does not say the list is cut and how many there are", errOut)
	}
	for _, limit := range []string{"3", "500"} {
		if _, _, errOut := f.runIn(nil, "quarantine", "--older-than", "0s", "--limit", limit); strings.Contains(errOut, "cut") {
			t.Errorf("quarantine --limit %s of 3: stderr %q says the list is cut", limit, errOut)
		}
	}
	for _, bad := range [][]string{{"--older-than", "-1m"}, {"--older-than", "soon"}, {"--limit", "0"}, {"extra"}} {
		if code, _, errOut := f.runIn(nil, append([]string{"quarantine"}, bad...)...); code != 2 || errOut == "" {
			t.Errorf("quarantine %v: exit %d, want 2 with a message", bad, code)
		}
	}
	// The next pass leaves them alone and reports them.
	s, _ := f.passIn(nil)
	// PostgreSQL keeps microseconds.
	if s.Minted != 1 || s.Quarantine != 3 || s.QuarantineSince == nil || s.QuarantineSince.Sub(now.Add(-3*time.Hour)).Abs() > time.Microsecond {
		t.Fatalf("pass = %+v", s)
	}
	if f.smtp.Total() != 1 {
		t.Fatalf("quarantined claims were sent: %d messages", f.smtp.Total())
	}
}

// `resolve` is the only manual release: recorded with who, when and why;
// refused from sent and missed.
func TestResolve(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, "", smtptest.WithMode(smtptest.CloseAfterData))
	if _, err := f.db.Exec(`INSERT INTO subscriptions (id, email, renews_at, period_start) VALUES ('closed', 'c@example.com', $1, $2)`,
		time.Now().Add(12*time.Hour), f.periodStart()); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.passIn(nil); s.Ambiguous != 4 || s.Missed != 1 {
		t.Fatalf("summary = %+v", s)
	}
	f.smtp.SetMode(smtptest.Accept)
	key := func(id string) string { return f.key(id, 0, testSecret) }
	start := time.Now().Add(-time.Second)

	code, out, errOut := f.runIn(nil, "resolve", key(subID(1)), "--sent", "--reason", "seen in the provider's dashboard", "--by", "alice")
	if code != 0 {
		t.Fatalf("resolve --sent: exit %d\n%s", code, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["from"] != "claimed" || res["to"] != "sent" || res["by"] != "alice" {
		t.Fatalf("resolve printed %q (%v)", out, err)
	}
	if code, _, _ := f.runIn(nil, "resolve", key(subID(2)), "--not-sent", "--reason", "provider has no trace of it"); code != 0 {
		t.Fatal("resolve --not-sent failed")
	}
	if code, _, _ := f.runIn(nil, "resolve", key(subID(3)), "--retry", "--reason", "bounced on a full mailbox", "--by", "bob"); code != 0 {
		t.Fatal("resolve --retry failed")
	}

	refused := []struct {
		name string
		args []string
		env  []string
	}{
		{"from sent", []string{key(subID(1)), "--retry", "--reason", "x"}, nil},
		{"from sent to sent", []string{key(subID(1)), "--sent", "--reason", "x"}, nil},
		{"from missed", []string{key("closed"), "--sent", "--reason", "x"}, nil},
		{"not a key", []string{"sub_000004", "--sent", "--reason", "x"}, nil},
		{"no reason", []string{key(subID(4)), "--sent"}, nil},
		{"two decisions", []string{key(subID(4)), "--sent", "--retry", "--reason", "x"}, nil},
		{"nobody", []string{key(subID(4)), "--sent", "--reason", "x"}, []string{"USER="}},
	}
	for _, r := range refused {
		code, _, errOut := f.runIn(r.env, append([]string{"resolve"}, r.args...)...)
		if code != 2 || errOut == "" {
			t.Errorf("resolve %s: exit %d, want 2 with a message (%q)", r.name, code, errOut)
		}
	}
	// A key that matches nothing is exit 1, not a usage error (issue 35).
	if code, _, errOut := f.runIn(nil, "resolve", strings.Repeat("ab", 32), "--sent", "--reason", "x"); code != 1 || !strings.Contains(errOut, "abababababab") {
		t.Errorf("resolve unknown key: exit %d, want 1 naming it (%q)", code, errOut)
	}

	var audit []struct {
		Key    string    `db:"notice_key"`
		From   string    `db:"from_state"`
		To     string    `db:"to_state"`
		By     string    `db:"resolved_by"`
		Reason string    `db:"reason"`
		At     time.Time `db:"resolved_at"`
	}
	if err := f.db.Select(&audit, `SELECT notice_key, from_state, to_state, resolved_by, reason, resolved_at FROM notice_ledger_resolution ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	want := []struct{ key, from, to, by, reason string }{
		{key(subID(1)), "claimed", "sent", "alice", "seen in the provider's dashboard"},
		{key(subID(2)), "claimed", "retry", "crash-test", "provider has no trace of it"},
		{key(subID(3)), "claimed", "retry", "bob", "bounced on a full mailbox"},
	}
	if len(audit) != len(want) {
		t.Fatalf("audit trail has %d rows, want %d: %+v", len(audit), len(want), audit)
	}
	for i, w := range want {
		a := audit[i]
		if a.Key != w.key || a.From != w.from || a.To != w.to || a.By != w.by || a.Reason != w.reason || a.At.Before(start) || a.At.After(time.Now()) {
			t.Errorf("audit row %d = %+v, want %+v", i, a, w)
		}
	}
	rows := f.rows()
	for id, st := range map[string]ledger.State{subID(1): ledger.Sent, subID(2): ledger.Retry, subID(3): ledger.Retry, subID(4): ledger.Claimed, "closed": ledger.Missed} {
		if rows[id].State != st {
			t.Errorf("%s: %s, want %s", id, rows[id].State, st)
		}
	}
	// The two released claims go out again; the others do not.
	if s, _ := f.passIn(nil); s.Retried != 2 || s.Sent != 2 || s.Quarantine != 1 {
		t.Fatalf("pass after resolve = %+v", s)
	}
}

// `backfill` imports what an earlier system sent, as sent: conflicts are
// counted, a malformed line rejects the file by its line number with
// nothing written, and the first pass afterwards sends none of them.
func TestBackfill(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, "")
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ps := f.periodStart()
	bad := write("bad.csv", "subscription_id,period_start,kind,revision,sent_at\n"+
		"sub_000001,"+ps+",renewal_notice_t72,0,2026-11-29T09:00:00Z\n"+
		"sub_000002,"+ps+",renewal_notice_t72,0,yesterday\n")
	code, _, errOut := f.runIn(nil, "backfill", "--from", bad)
	if code != 2 || !strings.Contains(errOut, "line 3") || !strings.Contains(errOut, "nothing was written") {
		t.Fatalf("malformed file: exit %d, want 2 naming line 3:\n%s", code, errOut)
	}
	if c := f.counts(); len(c) != 0 {
		t.Fatalf("a rejected file wrote %v", c)
	}

	good := write("good.csv", "subscription_id,period_start,kind,revision,sent_at\n"+
		"sub_000001,"+ps+",renewal_notice_t72,0,2026-11-29T09:00:00Z\n"+
		"sub_000002,"+ps+",renewal_notice_t72,,2026-11-29T09:00:01Z\n"+
		"sub_000003,"+ps+",renewal_notice_t72,0,2026-11-29T09:00:02+01:00\n"+
		"gone_elsewhere,2026-10-01,renewal_notice_t72,0,2026-09-29T09:00:00Z\n")
	code, out, errOut := f.runIn(nil, "backfill", "--from", good)
	if code != 0 || strings.TrimSpace(out) != `{"already_in_ledger":0,"inserted":4,"lines":4,"notices":4}` {
		t.Fatalf("backfill: exit %d, %q\n%s", code, out, errOut)
	}
	code, out, _ = f.runIn(nil, "backfill", "--from", good)
	if code != 0 || strings.TrimSpace(out) != `{"already_in_ledger":4,"inserted":0,"lines":4,"notices":4}` {
		t.Fatalf("backfill again: exit %d, %q", code, out)
	}
	rows := f.rows()
	if r := rows[subID(1)]; r.State != ledger.Sent || r.MessageID == nil || *r.MessageID != f.msgID(subID(1)) {
		t.Fatalf("backfilled row = %+v", r)
	}

	s, _ := f.passIn(nil)
	if s.Minted != 2 || s.Suppressed != 3 || f.smtp.Total() != 2 {
		t.Fatalf("first pass after backfill = %+v, %d messages; want only the 2 not backfilled", s, f.smtp.Total())
	}
	for i := 1; i <= 3; i++ {
		if f.smtp.Count(f.msgID(subID(i))) != 0 {
			t.Errorf("%s was backfilled and sent again", subID(i))
		}
	}
}

// `lookup` answers "did this notice go out?".
func TestLookup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	f.passIn(nil)
	code, out, _ := f.runIn(nil, "lookup", subID(1))
	rows := jsonLines[map[string]any](t, out)
	if code != 0 || len(rows) != 1 || rows[0]["state"] != "sent" || rows[0]["message_id"] != f.msgID(subID(1)) ||
		rows[0]["period_start"] != f.periodStart() || rows[0]["sent_at"] == nil {
		t.Fatalf("lookup: exit %d\n%s", code, out)
	}
	// The deadline's rule and zone are kept with the notice (issue 27).
	if r, _ := rows[0]["rule"].(string); !strings.Contains(r, "before renews_at") || rows[0]["time_zone"] != "UTC" || rows[0]["first_claimed_at"] == nil {
		t.Fatalf("lookup without the rule, time_zone or first_claimed_at:\n%s", out)
	}
	if strings.Contains(out, "@example.") {
		t.Fatal("lookup printed an address")
	}
	// An answer is due, not silence: exit 1 and one line (issue 35).
	if code, out, errOut := f.runIn(nil, "lookup", "nobody"); code != 1 || strings.TrimSpace(out) != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, `"nobody"`) {
		t.Fatalf("lookup of an unknown subscription: exit %d %q %q", code, out, errOut)
	}
	if code, _, _ := f.runIn(nil, "lookup"); code != 2 {
		t.Fatalf("lookup without an id: exit %d, want 2", code)
	}
}

var tokenRe = regexp.MustCompile(`token=([A-Za-z0-9_%=-]+)`)

// A bumped notice_revision sends one corrected notice whose ledger row
// points at the one it supersedes and whose cancellation link is the
// first message's.
func TestRevisionThroughTheCommand(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, "")
	f.passIn(nil)
	if _, err := f.db.Exec(`UPDATE subscriptions SET notice_revision = 1 WHERE id = $1`, subID(1)); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.passIn(nil); s.Minted != 1 || s.Sent != 1 {
		t.Fatalf("revision pass = %+v", s)
	}
	if s, _ := f.passIn(nil); s.Minted != 0 {
		t.Fatalf("third pass = %+v", s)
	}
	msgs := f.smtp.Messages()
	if len(msgs) != 2 {
		t.Fatalf("received %d messages, want 2", len(msgs))
	}
	link := func(raw []byte) string {
		m := tokenRe.FindSubmatch(bytes.ReplaceAll(raw, []byte("=\r\n"), nil))
		if m == nil {
			t.Fatalf("no cancellation link in\n%s", raw)
		}
		return string(m[1])
	}
	if a, b := link(msgs[0].Raw), link(msgs[1].Raw); a != b {
		t.Fatalf("the corrected notice's link differs: %s vs %s", a, b)
	}
	if msgs[0].MessageID == msgs[1].MessageID {
		t.Fatal("the corrected notice reused the Message-ID")
	}
	code, out, _ := f.runIn(nil, "lookup", subID(1))
	rows := jsonLines[ledger.Row](t, out)
	if code != 0 || len(rows) != 2 || rows[1].Revision != 1 || rows[1].Supersedes == nil || *rows[1].Supersedes != rows[0].NoticeKey {
		t.Fatalf("the revision's row does not point at the notice it supersedes: %s", out)
	}
}

// A pass records an outcome while reconcile is settling the same claim:
// reconcile counts it as already settled instead of failing the batch.
func TestReconcileRacesAPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "", smtptest.WithMode(smtptest.CloseAfterData))
	if s, _ := f.passIn(nil); s.Ambiguous != 2 {
		t.Fatalf("summary = %+v", s)
	}
	// Stand-in for the pass: a transaction that has recorded sub_000001
	// as sent but not committed yet.
	tx, err := f.db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.Exec(`UPDATE notice_ledger SET state = 'sent' WHERE subscription_id = $1`, subID(1)); err != nil {
		t.Fatal(err)
	}
	app := fmt.Sprintf("scan-test-reconcile-%d", time.Now().UnixNano())
	events := fmt.Sprintf("{\"message_id\":%q,\"event\":\"delivered\"}\n{\"message_id\":%q,\"event\":\"delivered\"}\n",
		f.msgID(subID(1)), f.msgID(subID(2)))
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"reconcile", "--events", "-"},
			f.getenv("DATABASE_URL="+withParam(t, f.dsn, "application_name", app)), strings.NewReader(events), &out, &errb)
		done <- res{code, out.String(), errb.String()}
	}()
	// Wait until reconcile is blocked on the row the "pass" holds.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		var n int
		if err := f.db.GetContext(ctx, &n, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("reconcile ended without waiting for the pass: exit %d\n%s\n%s", r.code, r.out, r.err)
		case <-ctx.Done():
			t.Fatal("reconcile never waited on the pass's row lock")
		case <-tick.C:
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("reconcile: exit %d\n%s", r.code, r.err)
	}
	lines := jsonLines[map[string]any](t, r.out)
	if sum := lines[len(lines)-1]; sum["settled"] != float64(1) || sum["already_settled"] != float64(1) {
		t.Fatalf("reconcile summary = %v", sum)
	}
	rows := f.rows()
	if rows[subID(1)].State != ledger.Sent || rows[subID(2)].State != ledger.Sent {
		t.Fatalf("rows = %+v", rows)
	}
}

// After a crash, once reconcile has settled what the provider saw, an
// operator can release the rest of that run's claims in one decision;
// each change is still recorded on its own.
func TestResolveRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, "", smtptest.WithMode(smtptest.CloseAfterData))
	s, _ := f.passIn(nil)
	if s.Ambiguous != 5 {
		t.Fatalf("summary = %+v", s)
	}
	f.smtp.SetMode(smtptest.Accept)
	code, out, errOut := f.runIn(nil, "resolve", "--run", s.RunID, "--not-sent", "--reason", "no provider event after 24h", "--by", "carol")
	if code != 0 {
		t.Fatalf("resolve --run: exit %d\n%s", code, errOut)
	}
	lines := jsonLines[map[string]any](t, out)
	if len(lines) != 6 || lines[5]["resolved"] != float64(5) {
		t.Fatalf("resolve --run printed %q", out)
	}
	if c := f.counts(); c[ledger.Retry] != 5 || c[ledger.Claimed] != 0 {
		t.Fatalf("ledger = %v", c)
	}
	var audit int
	if err := f.db.Get(&audit, `SELECT count(*) FROM notice_ledger_resolution WHERE resolved_by = 'carol'`); err != nil || audit != 5 {
		t.Fatalf("audit rows = %d, %v", audit, err)
	}
	// Nothing matched: exit 1, not a usage error (issue 35).
	if code, _, _ := f.runIn(nil, "resolve", "--run", s.RunID, "--not-sent", "--reason", "again"); code != 1 {
		t.Fatalf("a run with nothing left to resolve: exit %d, want 1", code)
	}
	if s2, _ := f.passIn(nil); s2.Retried != 5 || s2.Sent != 5 {
		t.Fatalf("next pass = %+v", s2)
	}
}
