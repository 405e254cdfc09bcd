package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// DidYouMean phrases suggestions: `; did you mean "a" or "b"?`.
func DidYouMean(s []string) string {
	if len(s) == 0 {
		return ""
	}
	q := make([]string, len(s))
	for i, n := range s {
		q[i] = fmt.Sprintf("%q", n)
	}
	return "; did you mean " + OrList(q) + "?"
}

// SimilarFlags are the visible flags of fs whose name is within two edits
// of name, or starts with it, as --name.
func SimilarFlags(fs *pflag.FlagSet, name string) []string {
	var out []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && (strings.HasPrefix(f.Name, name) || distance(f.Name, name) <= 2) {
			out = append(out, "--"+f.Name)
		}
	})
	sort.Strings(out)
	return out
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// OrList writes names as a usage lists them: "a, b, c or d".
func OrList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
