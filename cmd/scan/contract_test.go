package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// contractPath is the operator contract, which CI lays beside the clone
// (../shared/contract.md from the repository's top).
const contractPath = "../../../shared/contract.md"

// contractCommand is one row of the contract's Commands table: the command
// path an operator types ("suppress add") and the flags the row names.
type contractCommand struct {
	path  []string
	flags []string
}

var (
	contractRow  = regexp.MustCompile("^\\| `scan ([^`]+)`")
	contractFlag = regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	contractWord = regexp.MustCompile(`^[a-z][a-z-]*$`)
)

// contractCommands reads the Commands table: each row's first cell, cut at
// the first word that is not a command name (a flag, an argument, an
// alternative such as "add|remove", which names several commands).
func contractCommands(t *testing.T, text string) []contractCommand {
	t.Helper()
	var out []contractCommand
	for _, line := range strings.Split(text, "\n") {
		m := contractRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cell := m[1]
		var paths [][]string
		paths = append(paths, nil)
		for _, w := range strings.Fields(cell) {
			alts := strings.Split(w, `\|`)
			if len(alts) == 1 {
				alts = strings.Split(w, "|")
			}
			ok := true
			for _, a := range alts {
				ok = ok && contractWord.MatchString(a)
			}
			if !ok || strings.HasPrefix(w, "-") {
				break
			}
			var next [][]string
			for _, p := range paths {
				for _, a := range alts {
					next = append(next, append(append([]string{}, p...), a))
				}
			}
			paths = next
		}
		flags := contractFlag.FindAllString(cell, -1)
		for _, p := range paths {
			if len(p) > 0 && p[0] != "completion" { // completion's words are shells, checked by TestCommandLineOfTheBinary
				out = append(out, contractCommand{path: p, flags: flags})
			}
		}
	}
	return out
}

// Every command of the operator contract exists in the binary, and its
// help names every flag the contract's row gives it: what the contract
// promises, `scan CMD --help` shows.
func TestHelpMatchesTheContract(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.FromSlash(contractPath))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the operator contract is not beside the clone: %v", err)
		}
		t.Skipf("no operator contract at %s: %v", contractPath, err)
	}
	cmds := contractCommands(t, string(b))
	if len(cmds) < 20 {
		t.Fatalf("only %d commands read from the contract's table: %+v", len(cmds), cmds)
	}
	for _, c := range cmds {
		name := strings.Join(c.path, " ")
		help := runBinary(t, append(c.path, "--help")...)
		if help.code != 0 {
			t.Errorf("scan %s --help: exit %d: %s", name, help.code, help.stderr)
			continue
		}
		for _, f := range c.flags {
			if f == "--help" {
				continue
			}
			if !regexp.MustCompile(regexp.QuoteMeta(f) + `\b`).MatchString(help.stdout) {
				t.Errorf("scan %s --help does not name %s, which the contract gives it:\n%s", name, f, help.stdout)
			}
		}
	}
}
