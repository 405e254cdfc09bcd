package cli_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"scan/internal/cli"
)

// Every time flag takes a duration back from now (with d for days) or an
// RFC 3339 instant, and nothing else.
func TestTimeFlag(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2d", now.Add(-48 * time.Hour)},
		{"30m", now.Add(-30 * time.Minute)},
		{"0s", now},
		{"1d12h", now.Add(-36 * time.Hour)},
		{"2026-11-28T02:00:00Z", now.Add(-48 * time.Hour)},
		{"2026-11-28T03:00:00+01:00", now.Add(-48 * time.Hour)},
	} {
		f := cli.NewTimeFlag("")
		if err := f.Set(tc.in); err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := f.Instant(now); !got.Equal(tc.want) {
			t.Errorf("%q: instant %v, want %v", tc.in, got, tc.want)
		}
		if got := f.Ago(now); got != now.Sub(tc.want) {
			t.Errorf("%q: ago %v, want %v", tc.in, got, now.Sub(tc.want))
		}
		if !f.Given() || f.String() != tc.in {
			t.Errorf("%q: given %v, string %q", tc.in, f.Given(), f.String())
		}
	}
	for _, bad := range []string{"", "soon", "-2d", "2026-11-28", "2026-11-28 02:00:00", "2 days"} {
		if err := cli.NewTimeFlag("").Set(bad); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("%q: accepted (%v)", bad, err)
		}
	}
	if f := cli.NewTimeFlag(""); f.Given() {
		t.Error("a flag without default is given")
	}
	if f := cli.NewTimeFlag("15m"); !f.Given() || f.Ago(now) != 15*time.Minute {
		t.Errorf("default 15m: %v", f.Ago(now))
	}
}

// -o picks the format; --json is -o json; with neither, a terminal gets a
// table and a pipe JSON.
func TestOutputFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		terminal bool
		want     string
	}{
		{nil, true, cli.Table}, {nil, false, cli.JSON}, {[]string{"-o", "csv"}, true, cli.CSV},
		{[]string{"--output=table"}, false, cli.Table}, {[]string{"--json"}, true, cli.JSON},
		{[]string{"--format", "csv"}, false, cli.CSV}, {[]string{"--json", "-o", "json"}, true, cli.JSON},
	} {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		o := cli.OutputFlag(fs, true)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got, err := o.Format(tc.terminal); err != nil || got != tc.want {
			t.Errorf("%v (terminal %v): %q, %v; want %q", tc.args, tc.terminal, got, err, tc.want)
		}
	}
	for _, args := range [][]string{{"-o", "xml"}, {"--json", "-o", "csv"}} {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		o := cli.OutputFlag(fs, false)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if got, err := o.Format(false); err == nil {
			t.Errorf("%v: %q accepted", args, got)
		}
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	cli.OutputFlag(fs, false)
	if err := fs.Parse([]string{"--format", "csv"}); err == nil {
		t.Error("--format declared where it was not asked for")
	}
}

// A listing prints the same records as JSON lines, CSV or a table.
func TestListingPrint(t *testing.T) {
	t.Parallel()
	l := &cli.Listing{Header: []string{"id", "state"}, Empty: "nothing",
		Records: []any{map[string]string{"id": "a", "state": "sent"}, map[string]string{"id": "b,c", "state": "retry"}},
		Cells:   [][]string{{"a", "sent"}, {"b,c", "retry"}}}
	for format, want := range map[string]string{
		cli.JSON:  "{\"id\":\"a\",\"state\":\"sent\"}\n{\"id\":\"b,c\",\"state\":\"retry\"}\n",
		cli.CSV:   "id,state\na,sent\n\"b,c\",retry\n",
		cli.Table: "ID   STATE\na    sent\nb,c  retry\n",
	} {
		var b bytes.Buffer
		if err := l.Print(&b, format); err != nil || b.String() != want {
			t.Errorf("%s: %q, %v; want %q", format, b.String(), err, want)
		}
	}
	var b bytes.Buffer
	empty := &cli.Listing{Header: []string{"id"}, Empty: "nothing"}
	for _, f := range []string{cli.Table, cli.CSV, cli.JSON} {
		_ = empty.Print(&b, f)
	}
	if b.String() != "nothing\nid\n" {
		t.Errorf("empty listing printed %q", b.String())
	}
}

// --max-mint N: no "(default -1)" in the help, and unset is not 0.
func TestOptionalInt(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var n cli.OptionalInt
	fs.Var(&n, "max-mint", "refuse above N")
	if u := fs.FlagUsages(); strings.Contains(u, "default") || !strings.Contains(u, "--max-mint N") {
		t.Errorf("usage %q", u)
	}
	if _, set := n.Value(); set {
		t.Error("unset flag is set")
	}
	if err := fs.Parse([]string{"--max-mint", "0"}); err != nil {
		t.Fatal(err)
	}
	if v, set := n.Value(); !set || v != 0 {
		t.Errorf("--max-mint 0: %d %v", v, set)
	}
	for _, bad := range []string{"many", "1.5", "", "12abc"} {
		if err := new(cli.OptionalInt).Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A typo of a flag suggests the visible flags near it.
func TestSimilarFlags(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.Bool("dry-run", false, "")
	fs.String("older-than", "", "")
	fs.String("max-duration", "", "")
	_ = fs.MarkHidden("max-duration")
	for name, want := range map[string]string{
		"dry-rn":       `; did you mean "--dry-run"?`,
		"older":        `; did you mean "--older-than"?`,
		"max-duratoin": "",
		"frobnicate":   "",
	} {
		if got := cli.DidYouMean(cli.SimilarFlags(fs, name)); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if got := cli.OrList([]string{"a", "b", "c"}); got != "a, b or c" {
		t.Errorf("OrList: %q", got)
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":           "",
		"one line  ": "one line  ",
		"yaml: 2 errors:\n  line 3: x\r\n  line 4: y\n": "yaml: 2 errors:; line 3: x; line 4: y",
	} {
		if got := cli.OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShardFlag(t *testing.T) {
	t.Parallel()
	var unset cli.ShardFlag
	if _, _, ok := unset.Value(); ok {
		t.Error("an unset --shard says it was given")
	}
	for in, want := range map[string][2]int{"0/1": {0, 1}, "3/4": {3, 4}} {
		var s cli.ShardFlag
		if err := s.Set(in); err != nil {
			t.Errorf("Set(%q): %v", in, err)
		}
		if i, n, ok := s.Value(); !ok || i != want[0] || n != want[1] || s.String() != in {
			t.Errorf("Set(%q): %d/%d given %v (%q), want %v", in, i, n, ok, s.String(), want)
		}
	}
	for _, in := range []string{"", "half", "4/4", "-1/2", "0/0", "1/", "/2", "a/b"} {
		var s cli.ShardFlag
		if err := s.Set(in); err == nil || !strings.Contains(err.Error(), "0 <= I < N") {
			t.Errorf("Set(%q) = %v, want an error saying I/N with 0 <= I < N", in, err)
		}
	}
}

func TestShardFlagResolve(t *testing.T) {
	t.Parallel()
	var given cli.ShardFlag
	if err := given.Set("1/3"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flag   *cli.ShardFlag
		shards int
		index  string
		i, n   int
		err    string
	}{
		{&given, 5, "4", 1, 3, ""},
		{&cli.ShardFlag{}, 0, "7", 0, 1, ""},
		{&cli.ShardFlag{}, 1, "", 0, 1, ""},
		{&cli.ShardFlag{}, 4, "3", 3, 4, ""},
		{&cli.ShardFlag{}, -1, "0", 0, 0, "--shards: must be at least 1"},
		{&cli.ShardFlag{}, 4, "4", 0, 0, `JOB_COMPLETION_INDEX: "4" is not a shard index below --shards=4`},
		{&cli.ShardFlag{}, 4, "", 0, 0, `JOB_COMPLETION_INDEX: "" is not a shard index below --shards=4`},
	} {
		i, n, err := c.flag.Resolve(c.shards, c.index)
		var ue *cli.UsageError
		switch {
		case c.err == "" && (err != nil || i != c.i || n != c.n):
			t.Errorf("%+v: %d/%d %v; want %d/%d", c, i, n, err, c.i, c.n)
		case c.err != "" && (!errors.As(err, &ue) || err.Error() != c.err):
			t.Errorf("%+v: %v; want %s", c, err, c.err)
		}
	}
}
