package policy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every policy example of "What a notice says" (docs/configuration.md) parses and
// validates: the laws' timing, as written there, can be met.
func TestReadmeNoticeExamplesParse(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n## What a notice says\n")
	if !ok {
		t.Fatal(`docs/configuration.md has no section "What a notice says"`)
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

// The policy example of docs/configuration.md is testdata/example.yaml,
// the one the tests parse, to the byte: neither can drift from the other.
func TestReadmePolicyExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\nPolicy file (YAML;")
	if !ok {
		t.Fatal(`docs/configuration.md has no "Policy file (YAML;" paragraph`)
	}
	_, block, ok := strings.Cut(sec, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("no YAML block after the \"Policy file\" paragraph of docs/configuration.md")
	}
	example, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if block != string(example) {
		t.Fatalf("the policy example of docs/configuration.md differs from internal/policy/testdata/example.yaml; make them equal\ndocs/configuration.md:\n%s\nexample.yaml:\n%s", block, example)
	}
}
