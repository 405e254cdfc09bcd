package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"scan/internal/usage"
)

// UsageError is what an operator must fix before the program does
// anything: an unknown command, subcommand or flag, a bad value of a flag
// or of a setting, too many arguments. Field names what to fix (a flag,
// a variable, an argument). The command maps it to its usage exit code.
type UsageError = usage.Error

// Usagef returns a *UsageError about field.
func Usagef(field, format string, a ...any) error {
	return usage.Errorf(field, format, a...)
}

// OneLine folds a multi-line error message (a YAML decoder's list, a
// driver's detail) into the one line an operator greps for: its lines
// trimmed and joined with "; ".
func OneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "; ")
}

// Redact is what the tree passes an operator's words through before they
// are printed back (an argument may be a secret typed in the wrong place).
type Redact func(string) string

// path is cc's path below the root: "suppress add".
func path(cc *cobra.Command) string {
	return strings.TrimPrefix(cc.CommandPath(), cc.Root().Name()+" ")
}

// EnvHelp is a command's long help: short, long (when not empty), then
// the variables vars it reads, one a line with what table says of each.
func EnvHelp(short, long string, vars []string, table map[string]string) string {
	s := short
	if long != "" {
		s += "\n\n" + long
	}
	if len(vars) == 0 {
		return s
	}
	w := 0
	for _, v := range vars {
		w = max(w, len(v))
	}
	s += "\n\nEnvironment:"
	for _, v := range vars {
		s += fmt.Sprintf("\n  %-*s  %s", w, v, table[v])
	}
	return s
}

// MaxArgs lets cc take at most n positional arguments; more is a
// *UsageError naming the first one too many.
func MaxArgs(n int, redact Redact) cobra.PositionalArgs {
	return func(cc *cobra.Command, args []string) error {
		if len(args) > n {
			return Usagef("arguments", "%s takes %s, got %q (see '%s %s --help')", cc.Name(), argCount(n), redact(args[n]), cc.Root().Name(), path(cc))
		}
		return nil
	}
}

func argCount(n int) string {
	switch n {
	case 0:
		return "no arguments"
	case 1:
		return "at most one argument"
	}
	return fmt.Sprintf("at most %d arguments", n)
}

// Group makes cc a group of its subcommands names: run alone it is a
// *UsageError listing them in that order, and an unknown subcommand is
// one suggesting the nearest.
func Group(cc *cobra.Command, names []string, redact Redact) {
	cc.Args = func(cc *cobra.Command, args []string) error {
		if len(args) > 0 {
			return Usagef(cc.Name(), "unknown subcommand %q%s ('%s %s --help' lists them)", redact(args[0]), DidYouMean(cc.SuggestionsFor(args[0])), cc.Root().Name(), cc.Name())
		}
		return nil
	}
	cc.RunE = func(cc *cobra.Command, _ []string) error {
		return Usagef(cc.Name(), "give a subcommand: %s ('%s %s --help' says more)", OrList(names), cc.Root().Name(), cc.Name())
	}
}

// Root makes root refuse an unknown command (suggesting the nearest) and
// a run without one, as *UsageErrors, turns a flag it cannot parse into
// one (FlagError), and adds `help` (HelpCommand) and a completion
// command that refuses an unknown shell. Call it once every command is
// added.
func Root(root *cobra.Command, redact Redact) {
	name := root.Name()
	root.Args = func(cc *cobra.Command, args []string) error {
		if len(args) > 0 {
			return Usagef("command", "unknown command %q%s ('%s --help' lists them)", redact(args[0]), DidYouMean(cc.SuggestionsFor(args[0])), name)
		}
		return nil
	}
	root.RunE = func(*cobra.Command, []string) error {
		return Usagef("command", "missing: '%s --help' lists the commands", name)
	}
	root.SetFlagErrorFunc(FlagError)
	root.SetHelpCommand(HelpCommand(root, redact))
	// cobra's completion group takes bash, zsh, fish and powershell; an
	// unknown shell is a usage error like an unknown subcommand.
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		c.Args = func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("completion", "unknown shell %q: use bash, zsh, fish or powershell", redact(args[0]))
			}
			return nil
		}
		c.RunE = func(*cobra.Command, []string) error {
			return Usagef("completion", "give the shell: %s completion bash|zsh|fish|powershell", name)
		}
	}
}

// HelpCommand is `help [COMMAND...]`: the same as `COMMAND --help`; an
// unknown command is a *UsageError.
func HelpCommand(root *cobra.Command, redact Redact) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "help about any command (the same as " + root.Name() + " COMMAND --help)",
		RunE: func(_ *cobra.Command, args []string) error {
			c, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				unknown := strings.Join(args, " ")
				if len(rest) > 0 {
					unknown = rest[0]
				}
				return Usagef("help", "unknown command %q%s ('%s --help' lists them)", redact(unknown), DidYouMean(c.SuggestionsFor(unknown)), root.Name())
			}
			c.InitDefaultHelpFlag()
			return c.Help()
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			c, _, _ := root.Find(args)
			var names []cobra.Completion
			for _, s := range c.Commands() {
				if s.IsAvailableCommand() {
					names = append(names, s.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// FlagError makes a flag that cannot be parsed a *UsageError: a bad value
// names its flag as the field, an unknown flag comes with the flag the
// operator probably meant.
func FlagError(cc *cobra.Command, err error) error {
	see := fmt.Sprintf(" (see '%s %s --help')", cc.Root().Name(), path(cc))
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		return Usagef("--"+bad.GetFlag().Name, "%v%s", errors.Unwrap(bad), see)
	}
	var unknown *pflag.NotExistError
	hint := ""
	if errors.As(err, &unknown) && len(unknown.GetSpecifiedName()) > 1 {
		hint = DidYouMean(SimilarFlags(cc.Flags(), unknown.GetSpecifiedName()))
	}
	return Usagef("flags", "%v%s%s", err, hint, see)
}

// SingleDashLong rewrites -name to --name where name is a long flag of
// the command args run: the spelling Go's flag package took (an
// operator's script may say -json). Shorthands (-o, -h), flags' values
// and everything after -- are left alone.
func SingleDashLong(root *cobra.Command, args []string) []string {
	c, _, err := root.Find(args)
	if err != nil {
		return args
	}
	out := slices.Clone(args)
	value := false // out[i] is the value of the flag before it
	for i, a := range args {
		if a == "--" {
			break
		}
		if value {
			value = false
			continue
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := c.Flags().Lookup(name)
		if f == nil || len(name) < 2 {
			continue
		}
		if !strings.HasPrefix(a, "--") {
			out[i] = "-" + a
		}
		value = !hasValue && f.NoOptDefVal == ""
	}
	return out
}
