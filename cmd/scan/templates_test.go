package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An operator's templates_dir overrides the embedded templates file by
// file: here the subject and text of every kind, while the HTML body stays
// the embedded one.
func TestTemplatesDirOverridesEmbeddedTemplates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	dir := t.TempDir()
	for name, body := range map[string]string{
		"default.subject.tmpl": "Your {{.Kind}} renews soon",
		"default.txt.tmpl":     "Custom body. Cancel: {{.CancelURL}}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pol, err := os.ReadFile(f.policy)
	if err != nil {
		t.Fatal(err)
	}
	custom := writePolicy(t, string(pol)+"\ntemplates_dir: "+dir+"\n")
	s, _ := f.passIn([]string{"SCAN_CONFIG=" + custom})
	if s.Sent != 2 {
		t.Fatalf("summary = %+v", s)
	}
	for _, m := range f.smtp.Messages() {
		raw := string(m.Raw)
		if !strings.Contains(raw, "Subject: Your renewal_notice_t72 renews soon") || !strings.Contains(raw, "Custom body. Cancel: ") {
			t.Fatalf("the custom templates were not used:\n%s", raw)
		}
		if !strings.Contains(raw, "text/html") {
			t.Fatal("the embedded HTML body is gone")
		}
	}
	missing := writePolicy(t, string(pol)+"\ntemplates_dir: "+filepath.Join(dir, "nope")+"\n")
	if code, _, errOut := f.runIn([]string{"SCAN_CONFIG=" + missing}, "run"); code != 2 || !strings.Contains(errOut, "templates_dir") {
		t.Fatalf("a missing templates_dir: exit %d, %q", code, errOut)
	}
}
