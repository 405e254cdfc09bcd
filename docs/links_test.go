// Package docs holds the documentation a newcomer reads after the README;
// its test keeps every relative link of README.md and docs/*.md pointing at
// a file and a heading that exist, and the README short.
package docs_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readmeMaxLines is the README's limit (issue 35): what a newcomer reads
// whole; the rest is in docs/.
const readmeMaxLines = 300

func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n >= readmeMaxLines {
		t.Fatalf("README.md has %d lines, want under %d: move detail into docs/", n, readmeMaxLines)
	}
	if !bytes.Contains(b, []byte("make test")) {
		t.Fatal("README.md no longer names `make test`, the test command")
	}
}

var linkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link resolves: its file exists, and its #anchor (when it
// has one and points at Markdown) is a heading of that file.
func TestRelativeLinksResolve(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../README.md")
	checked := 0
	for _, from := range files {
		for _, l := range links(t, from) {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(l.target, "#")
			target := from
			if path != "" {
				target = filepath.Join(filepath.Dir(from), path)
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s:%d: link %q: no file %s", from, l.line, l.target, target)
				continue
			}
			checked++
			if anchor != "" && strings.HasSuffix(target, ".md") && !anchors(t, target)[anchor] {
				t.Errorf("%s:%d: link %q: no heading #%s in %s", from, l.line, l.target, anchor, target)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d links checked: is the link pattern still right?", checked)
	}
}

type link struct {
	target string
	line   int
}

// links returns the inline links of a Markdown file, outside code fences
// and code spans.
func links(t *testing.T, path string) []link {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []link
	fenced := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRe.FindAllStringSubmatch(withoutCodeSpans(line), -1) {
			out = append(out, link{target: m[1], line: n})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var codeSpanRe = regexp.MustCompile("`[^`]*`")

func withoutCodeSpans(s string) string { return codeSpanRe.ReplaceAllString(s, "") }

var headingRe = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*$`)

// anchors returns the heading anchors of a Markdown file as GitHub makes
// them: lower case, spaces to hyphens, other punctuation dropped, a
// repeated heading suffixed -1, -2, ...
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		m := headingRe.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		slug := slugOf(m[1])
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func slugOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The slugs of headings this documentation links to, as GitHub makes them.
func TestSlugOf(t *testing.T) {
	for in, want := range map[string]string{
		"Status: one screen":                                   "status-one-screen",
		"Flow control: what a crash can strand":                "flow-control-what-a-crash-can-strand",
		"Draining SES events from SQS: `scan reconcile --sqs`": "draining-ses-events-from-sqs-scan-reconcile---sqs",
		"The receiver: scan receive":                           "the-receiver-scan-receive",
	} {
		if got := slugOf(in); got != want {
			t.Errorf("slugOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every document in docs/ is linked from the README: a newcomer finds
// each from the front door.
func TestEveryDocIsLinkedFromTheReadme(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob("*.md")
	if err != nil || len(docs) < 5 {
		t.Fatalf("docs: %v, %v", docs, err)
	}
	for _, d := range docs {
		if !bytes.Contains(b, []byte("](docs/"+d)) {
			t.Errorf("README.md does not link docs/%s", d)
		}
	}
}
