package cli_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"scan/internal/cli"
)

// tree is a root "tool" with a command "list" (flags --json, --since
// and -o) and a group "keys" of "add" and "remove".
func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", SilenceErrors: true, SilenceUsage: true, SuggestionsMinimumDistance: 2}
	redact := func(s string) string { return strings.ReplaceAll(s, "hunter2", "REDACTED") }
	list := &cobra.Command{Use: "list", Args: cli.MaxArgs(1, redact), RunE: func(*cobra.Command, []string) error { return nil }}
	list.Flags().Bool("json", false, "")
	list.Flags().String("since", "", "")
	list.Flags().StringP("output", "o", "", "")
	keys := &cobra.Command{Use: "keys"}
	for _, n := range []string{"add", "remove"} {
		keys.AddCommand(&cobra.Command{Use: n, RunE: func(*cobra.Command, []string) error { return nil }})
	}
	cli.Group(keys, []string{"add", "remove"}, redact)
	root.AddCommand(list, keys)
	cli.Root(root, redact)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	return root
}

// Every way a command line can be wrong is a *UsageError naming what to
// fix, in one line, with the operator's words redacted.
func TestTreeUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args        []string
		field, want string
	}{
		{[]string{"lst"}, "command", `unknown command "lst"; did you mean "list"? ('tool --help' lists them)`},
		{nil, "command", "missing: 'tool --help' lists the commands"},
		{[]string{"keys"}, "keys", "give a subcommand: add or remove ('tool keys --help' says more)"},
		{[]string{"keys", "ad"}, "keys", `unknown subcommand "ad"; did you mean "add"? ('tool keys --help' lists them)`},
		{[]string{"list", "a", "hunter2"}, "arguments", `list takes at most one argument, got "REDACTED" (see 'tool list --help')`},
		{[]string{"list", "--jsn"}, "flags", `unknown flag: --jsn; did you mean "--json"? (see 'tool list --help')`},
		{[]string{"list", "--json=maybe"}, "--json", ""},
		{[]string{"help", "lisst"}, "help", `unknown command "lisst"; did you mean "list"? ('tool --help' lists them)`},
		{[]string{"completion", "tcsh"}, "completion", `unknown shell "tcsh": use bash, zsh, fish or powershell`},
	} {
		root := tree()
		root.SetArgs(tc.args)
		err := root.Execute()
		var ue *cli.UsageError
		if !errors.As(err, &ue) || ue.Field != tc.field || (tc.want != "" && ue.Msg != tc.want) {
			t.Errorf("%q: %v; want %s: %s", tc.args, err, tc.field, tc.want)
		}
	}
}

// -name is --name for a long flag of the command; a shorthand, a flag's
// value and what follows -- are left alone.
func TestSingleDashLong(t *testing.T) {
	t.Parallel()
	root := tree()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"list", "-json", "-o", "csv", "-ojson", "-since=2d"}, []string{"list", "--json", "-o", "csv", "-ojson", "--since=2d"}},
		{[]string{"list", "-since", "-json", "--", "-json"}, []string{"list", "--since", "-json", "--", "-json"}},
		{[]string{"nothing", "-json"}, []string{"nothing", "-json"}},
	} {
		if got := cli.SingleDashLong(root, tc.in); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v: %v, want %v", tc.in, got, tc.want)
		}
	}
}
