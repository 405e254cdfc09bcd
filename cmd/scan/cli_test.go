package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"scan/internal/cli"
)

// commandPaths are the paths of every command and group of scan's tree,
// as an operator types them ("suppress add"), cobra's own (completion,
// help) included.
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	root := newRoot(&env{getenv: func(string) string { return "" }, stdout: io.Discard, stderr: io.Discard})
	root.InitDefaultCompletionCmd()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, s := range c.Commands() {
			if s.Hidden {
				continue
			}
			p := append(append([]string{}, path...), s.Name())
			paths = append(paths, p)
			walk(s, p)
		}
	}
	walk(root, nil)
	if len(paths) < len(commands)+5 {
		t.Fatalf("only %d command paths: %v", len(paths), paths)
	}
	return paths
}

// runBinary runs the built binary with args and no environment but PATH.
func runBinary(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(scanBinary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// The built binary, as an operator meets it: every command and group
// prints its help on stdout with --help and -h (exit 0, nothing on
// stderr), `scan help CMD` prints the same, `scan --help` lists every
// command, a typo of a command or a flag is exit 2 with a suggestion, and
// the bash completion script loads in bash.
func TestCommandLineOfTheBinary(t *testing.T) {
	t.Parallel()
	top := runBinary(t, "--help")
	if top.code != 0 || top.stderr != "" {
		t.Fatalf("scan --help: exit %d, stderr %q", top.code, top.stderr)
	}
	for _, c := range append(append([]*command{}, commands...), &command{use: "completion"}, &command{use: "help"}) {
		if !strings.Contains(top.stdout, "\n  "+c.name()+" ") {
			t.Errorf("scan --help does not list %s:\n%s", c.name(), top.stdout)
		}
	}
	for _, path := range commandPaths(t) {
		name := strings.Join(path, " ")
		long := runBinary(t, append(path, "--help")...)
		if long.code != 0 || long.stderr != "" || !strings.Contains(long.stdout, "scan "+name) {
			t.Errorf("scan %s --help: exit %d\nstdout:\n%s\nstderr:\n%s", name, long.code, long.stdout, long.stderr)
			continue
		}
		if short := runBinary(t, append(path, "-h")...); short.code != 0 || short.stdout != long.stdout {
			t.Errorf("scan %s -h: exit %d, stdout differs from --help:\n%s", name, short.code, short.stdout)
		}
		if help := runBinary(t, append([]string{"help"}, path...)...); help.code != 0 || help.stdout != long.stdout {
			t.Errorf("scan help %s: exit %d, stdout differs from --help:\n%s\nstderr:\n%s", name, help.code, help.stdout, help.stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lookp", "s1"}, `unknown command "lookp"; did you mean "lookup"?`},
		{[]string{"quarantin"}, `did you mean "quarantine"?`},
		{[]string{"suppress", "lst"}, `unknown subcommand "lst"; did you mean "list"?`},
		{[]string{"run", "--dry-rn"}, `unknown flag: --dry-rn; did you mean "--dry-run"?`},
		{[]string{"help", "recovr"}, `did you mean "recover"?`},
		{[]string{"completion", "bsh"}, `unknown shell "bsh": use bash, zsh, fish or powershell`},
		{[]string{"completion"}, "give the shell"},
	} {
		r := runBinary(t, tc.args...)
		if r.code != exitUsage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("scan %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, tc.want)
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if r := runBinary(t, "completion", shell); r.code != 0 || !strings.Contains(r.stdout, "scan") {
			t.Errorf("scan completion %s: exit %d, %d bytes", shell, r.code, len(r.stdout))
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to load the completion script")
	}
	out, err := exec.Command(bash, "-c", "source <('"+scanBinary(t)+"' completion bash) && complete -p scan").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "complete") {
		t.Errorf("the bash completion script does not load: %v\n%s", err, out)
	}
}

// The help names the variables each command needs, and keeps the old
// spellings out of sight: --max-mint has no "(default -1)", reconcile's
// receive time is not --max-duration.
func TestHelpConventions(t *testing.T) {
	t.Parallel()
	help := func(args ...string) string {
		var out bytes.Buffer
		if code := run(t.Context(), append(args, "--help"), func(string) string { return "" }, nil, &out, io.Discard); code != 0 {
			t.Fatalf("scan %v --help: exit %d", args, code)
		}
		return out.String()
	}
	if h := help("run"); strings.Contains(h, "default -1") || !strings.Contains(h, "--max-mint N") || !strings.Contains(h, "NOTICE_KEY_SECRET") {
		t.Errorf("scan run --help:\n%s", h)
	}
	if h := help("reconcile"); strings.Contains(h, "--max-duration") || !strings.Contains(h, "--receive-for") {
		t.Errorf("scan reconcile --help:\n%s", h)
	}
	for _, c := range [][]string{{"suppress", "add"}, {"suppress", "import"}, {"key"}, {"backfill"}} {
		if h := help(c...); !strings.Contains(h, "NOTICE_KEY_SECRET") {
			t.Errorf("scan %v --help does not name NOTICE_KEY_SECRET:\n%s", c, h)
		}
	}
	for _, c := range [][]string{{"lookup"}, {"quarantine"}, {"undelivered"}, {"suppress", "list"}, {"shadow", "report"}} {
		if h := help(c...); !strings.Contains(h, "-o, --output") || strings.Contains(h, "--json") || !strings.Contains(h, "DATABASE_URL") {
			t.Errorf("scan %v --help:\n%s", c, h)
		}
	}
}

// jsonObjects decodes every line of out as a JSON object; it fails on none.
func jsonObjects(t *testing.T, what, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %q is not a JSON object: %v\n%s", what, l, err, out)
		}
		objs = append(objs, m)
	}
	if len(objs) == 0 {
		t.Fatalf("%s printed nothing", what)
	}
	return objs
}

// Every listing command's -o json parses, line by line; --json is -o
// json; -o csv starts with its header; and the time flags take both a
// duration (2d) and an RFC 3339 instant.
func TestListingsAndTimeFlags(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	if code, _, errOut := f.runIn(nil, "suppress", "add", "--email", "user1@example.net", "--reason", "asked"); code != 0 {
		t.Fatalf("suppress add: %d %s", code, errOut)
	}
	f.passIn(nil)
	// A claim with no outcome, three days old: quarantined, and an
	// undelivered notice (reason quarantine) changed three days ago.
	if _, err := f.db.Exec(`INSERT INTO notice_ledger (notice_key, subscription_id, kind, period_start, revision, state, claimed_at, attempts, run_id)
		VALUES (repeat('b', 64), 'sub_old', $1, $2, 0, 'claimed', now() - interval '3 days', 1, 'earlier')`, testKind, f.periodStart()); err != nil {
		t.Fatal(err)
	}
	legacy := filepath.Join(t.TempDir(), "legacy.csv")
	if err := os.WriteFile(legacy, []byte("subscription_id,period_start,kind,revision,sent_at\nsub_000002,"+f.periodStart()+","+testKind+",0,2026-01-01T00:00:00Z\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"lookup", subID(2)}, {"lookup", "--subscription", subID(2)}, {"quarantine", "--older-than", "0s"},
		{"undelivered"}, {"suppress", "list"}, {"shadow", "report", "--legacy", legacy},
	} {
		what := strings.Join(args, " ")
		code, out, errOut := f.runIn(nil, append(args, "-o", "json")...)
		if code != 0 {
			t.Fatalf("%s -o json: exit %d: %s", what, code, errOut)
		}
		jsonObjects(t, what+" -o json", out)
		if _, alias, _ := f.runIn(nil, append(args, "--json")...); alias != out {
			t.Errorf("%s --json differs from -o json:\n%s\n%s", what, alias, out)
		}
		if _, csvOut, _ := f.runIn(nil, append(args, "-o", "csv")...); !strings.Contains(strings.SplitN(csvOut, "\n", 2)[0], ",") {
			t.Errorf("%s -o csv has no header: %q", what, csvOut)
		}
	}
	if code, out, errOut := f.runIn(nil, "shadow", "report", "--legacy", legacy, "-o", "json"); code != 0 || jsonObjects(t, "shadow report", out)[0]["legacy_sends"] != 1.0 {
		t.Errorf("shadow report: exit %d %s %s", code, out, errOut)
	}
	now := time.Now().UTC()
	count := func(args ...string) int {
		t.Helper()
		code, out, errOut := f.runIn(nil, append(args, "-o", "json")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return strings.Count(out, "\n")
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"quarantine", "--older-than", "2d"}, 1},
		{[]string{"quarantine", "--older-than", "4d"}, 0},
		{[]string{"quarantine", "--older-than", now.Add(-48 * time.Hour).Format(time.RFC3339)}, 1},
		{[]string{"quarantine", "--older-than", now.Add(-96 * time.Hour).Format(time.RFC3339)}, 0},
		{[]string{"undelivered", "--since", "2d"}, 1},
		{[]string{"undelivered", "--since", "4d"}, 2},
		{[]string{"undelivered", "--since", now.Add(-48 * time.Hour).Format(time.RFC3339)}, 1},
		{[]string{"undelivered", "--since", now.Add(-96 * time.Hour).Format(time.RFC3339)}, 2},
	} {
		if got := count(tc.args...); got != tc.want {
			t.Errorf("%v: %d rows, want %d", tc.args, got, tc.want)
		}
	}
	for _, older := range []string{"400d", now.AddDate(-2, 0, 0).Format(time.RFC3339)} {
		code, out, errOut := f.runIn(nil, "prune", "--dry-run", "--older-than", older)
		if code != 0 || !strings.Contains(out, `"dry_run":true`) {
			t.Errorf("prune --older-than %s: exit %d %s %s", older, code, out, errOut)
		}
	}
	for _, bad := range [][]string{{"quarantine", "--older-than", "soon"}, {"undelivered", "--since", "-2d"}, {"prune", "--older-than", "yesterday"}, {"recover", "--since", "2026-13-01"}} {
		if code, _, errOut := f.runIn(nil, bad...); code != exitUsage || !strings.Contains(errOut, bad[1]) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", bad, code, errOut, bad[1])
		}
	}
	code, out, errOut := f.runIn(nil, "recover", "--since", "2d", "--none-lost", "--reason", "test", "--by", "cli")
	var rep struct{ Since time.Time }
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Since.Sub(now.Add(-48*time.Hour)).Abs() > time.Minute {
		t.Errorf("recover --since 2d: exit %d, %s %s", code, out, errOut)
	}
}

// A subscription or key that matches nothing is exit 1 with one line on
// stderr; a malformed one stays a usage error.
func TestNothingMatchedIsExit1(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	for _, args := range [][]string{
		{"lookup", "NO_SUCH"},
		{"lookup", "--subscription", "NO_SUCH", "-o", "json"},
		{"resolve", strings.Repeat("c", 64), "--sent", "--reason", "r"},
		{"resolve", "--run", "no-such-run", "--retry", "--reason", "r"},
	} {
		code, out, errOut := f.runIn(nil, args...)
		if code != exitAborted || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one line", args, code, out, errOut)
		}
	}
	if code, _, errOut := f.runIn(nil, "lookup", "NO_SUCH"); !strings.Contains(errOut, `"NO_SUCH"`) {
		t.Errorf("lookup: exit %d, stderr %q does not name the subscription", code, errOut)
	}
	for _, args := range [][]string{{"lookup"}, {"lookup", "a", "b"}, {"lookup", "a", "--subscription", "b"}, {"resolve", "nothex", "--sent", "--reason", "r"}} {
		if code, _, errOut := f.runIn(nil, args...); code != exitUsage {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errOut)
		}
	}
}

// scan key --channel sms prints the key whose material ends in "|sms"
// (the contract); email's is unchanged.
func TestKeyChannel(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"NOTICE_KEY_SECRET": usageSecret}
	base := []string{"key", "--subscription", "s1", "--period-start", "2026-12-01", "--kind", "k"}
	email := runInProcess(t, vars, base...)
	explicit := runInProcess(t, vars, append(base, "--channel", "email")...)
	sms := runInProcess(t, vars, append(base, "--channel", "sms")...)
	// HMAC-SHA256(usageSecret, "s1|2026-12-01|k|0|sms"), computed apart.
	const wantSMS = "8c8049e3c03db93541d683928c7d7d4757759cdeda14942bbad456097b587368"
	if email.code != 0 || explicit.stdout != email.stdout || sms.code != 0 || sms.stdout == email.stdout || strings.TrimSpace(sms.stdout) != wantSMS {
		t.Errorf("email %q / %q, sms %q (exit %d %s)", email.stdout, explicit.stdout, sms.stdout, sms.code, sms.stderr)
	}
	if bad := runInProcess(t, vars, append(base, "--channel", "fax")...); bad.code != exitUsage || !strings.Contains(bad.stderr, "--channel") {
		t.Errorf("--channel fax: exit %d %s", bad.code, bad.stderr)
	}
}

// A script written when scan took Go's flag package still works: -name is
// --name for a long flag; a shorthand and what follows -- are untouched.
func TestSingleDashLongFlags(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"NOTICE_KEY_SECRET": usageSecret}
	want := runInProcess(t, vars, "key", "--subscription", "s1", "--period-start", "2026-12-01", "--kind", "k", "--channel=sms")
	got := runInProcess(t, vars, "key", "-subscription", "s1", "-period-start=2026-12-01", "-kind", "k", "-channel=sms")
	if want.code != 0 || got.code != 0 || got.stdout != want.stdout {
		t.Errorf("-name: exit %d %q %q, want %q", got.code, got.stdout, got.stderr, want.stdout)
	}
	root := newRoot(&env{getenv: func(string) string { return "" }, stdout: io.Discard, stderr: io.Discard})
	for _, tc := range []struct{ in, want []string }{
		{[]string{"quarantine", "-json", "-o", "csv", "-ojson", "-older-than=2d"}, []string{"quarantine", "--json", "-o", "csv", "-ojson", "--older-than=2d"}},
		{[]string{"resolve", "-reason", "-sent", "-retry", "--", "-sent"}, []string{"resolve", "--reason", "-sent", "--retry", "--", "-sent"}},
		{[]string{"resolve", "--by", "-run", "-sent"}, []string{"resolve", "--by", "-run", "--sent"}},
		{[]string{"frobnicate", "-json"}, []string{"frobnicate", "-json"}},
	} {
		if got := cli.SingleDashLong(root, tc.in); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v: %v, want %v", tc.in, got, tc.want)
		}
	}
}
