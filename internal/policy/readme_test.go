package policy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every policy example of the README's "What a notice says" parses and
// validates: the laws' timing, as written there, can be met.
func TestReadmeNoticeExamplesParse(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n## What a notice says\n")
	if !ok {
		t.Fatal(`README has no section "What a notice says"`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(sec, -1)
	if len(blocks) < 5 {
		t.Fatalf("%d YAML examples, want one per law", len(blocks))
	}
	for _, b := range blocks {
		if _, err := Parse(strings.NewReader(b[1])); err != nil {
			t.Errorf("example does not parse: %v\n%s", err, b[1])
		}
	}
}
