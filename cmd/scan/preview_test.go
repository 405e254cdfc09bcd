package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ledgerCount is the number of ledger rows, of any state.
func (f *fixture) ledgerCount() int {
	f.t.Helper()
	var n int
	if err := f.db.Get(&n, `SELECT count(*) FROM notice_ledger`); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// `scan preview --subscription` prints the message a pass would send now,
// headers and text, with the notice's own key, and writes nothing to the
// ledger and sends nothing; after the pass it says the notice is already
// in the ledger.
func TestPreviewSubscriptionWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, "")
	code, out, errOut := f.runIn(nil, "preview", "--subscription", subID(1))
	if code != 0 {
		t.Fatalf("preview: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"From: ", "To: ", "Subject: ", "Message-ID: <" + f.msgID(subID(1)) + ">", "X-Notice-Key: " + f.key(subID(1), 0, testSecret), "\n\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("preview lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\r") || strings.Contains(out, "text/html") {
		t.Errorf("preview is not headers and text:\n%s", out)
	}
	if !strings.Contains(errOut, "due now") {
		t.Errorf("stderr does not say it is due: %q", errOut)
	}
	if n := f.ledgerCount(); n != 0 || f.smtp.Total() != 0 {
		t.Fatalf("preview wrote %d ledger rows and sent %d messages", n, f.smtp.Total())
	}
	if s, _ := f.passIn(nil); s.Sent != 2 {
		t.Fatalf("pass %+v", s)
	}
	code, out2, errOut := f.runIn(nil, "preview", "--subscription", subID(1), "--kind", testKind)
	if code != 0 || !strings.Contains(errOut, "already in the ledger (state sent)") || withoutDate(out2) != withoutDate(out) {
		t.Fatalf("preview after the pass: exit %d, %q; same message %v", code, errOut, withoutDate(out2) == withoutDate(out))
	}
	if n := f.ledgerCount(); n != 2 || f.smtp.Total() != 2 {
		t.Fatalf("after the second preview: %d ledger rows, %d messages", n, f.smtp.Total())
	}
	// Nothing due at another instant: said on stderr, nothing on stdout.
	code, out, errOut = f.runIn(nil, "preview", "--subscription", subID(1), "--now", "2020-01-01T00:00:00Z")
	if code != 0 || out != "" || !strings.Contains(errOut, "no notice is due now") {
		t.Fatalf("preview at another time: exit %d, %q, %q", code, out, errOut)
	}
}

// withoutDate drops the Date header, which is the preview's own now.
func withoutDate(msg string) string {
	var keep []string
	for _, l := range strings.Split(msg, "\n") {
		if !strings.HasPrefix(l, "Date: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// `scan preview --kind --locale --out` writes a sample notice per kind and
// locale from built-in data, with no database and no secret.
func TestPreviewSamples(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, "")
	dir := filepath.Join(t.TempDir(), "samples")
	code, out, errOut := f.runIn([]string{"DATABASE_URL=", "NOTICE_KEY_SECRET="}, "preview", "--kind", testKind, "--locale", "en,de-AT", "--locale", "de", "--out", dir)
	if code != 0 {
		t.Fatalf("preview: exit %d\n%s", code, errOut)
	}
	for _, l := range []string{"en", "de-AT", "de"} {
		base := filepath.Join(dir, testKind+"."+l)
		if !strings.Contains(out, base+".eml") {
			t.Errorf("stdout does not list %s.eml: %q", base, out)
		}
		eml, err := os.ReadFile(base + ".eml")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(eml), "Subject: ") || !strings.Contains(string(eml), "Alex Example") {
			t.Errorf("%s.eml is not a sample notice:\n%s", base, eml)
		}
		for _, ext := range []string{".txt", ".html"} {
			if _, err := os.Stat(base + ext); err != nil {
				t.Error(err)
			}
		}
	}
	if n := f.ledgerCount(); n != 0 || f.smtp.Total() != 0 {
		t.Fatalf("samples wrote %d ledger rows and sent %d messages", n, f.smtp.Total())
	}
}

// Every bad flag of `scan preview` exits 2 naming it, and writes nothing.
func TestPreviewUsageErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, "")
	out := t.TempDir()
	for _, tc := range []struct {
		args  []string
		field string
	}{
		{[]string{"--kind", "nope", "--out", out}, "--kind"},
		{[]string{"--kind", testKind, "--locale", "not a locale", "--out", out}, "--locale"},
		{[]string{"--kind", testKind, "--locale", "en"}, "--out"},
		{[]string{"--kind", testKind, "--locale", "en", "--jurisdiction", "../US", "--out", out}, "--jurisdiction"},
		{[]string{"--subscription", subID(1), "--out", out}, "--out"},
		{[]string{"--subscription", subID(1), "--locale", "de"}, "--locale"},
		{[]string{"--subscription", subID(1), "--now", "tomorrow"}, "--now"},
		{[]string{"--subscription", subID(1), "--kind", "nope"}, "--kind"},
		{[]string{"--subscription", subID(1), "--source", "a.b.c"}, "--source"},
		{[]string{"extra"}, "arguments"},
	} {
		code, _, errOut := f.runIn(nil, append([]string{"preview"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.field) {
			t.Errorf("preview %v: exit %d, %q; want 2 naming %s", tc.args, code, errOut, tc.field)
		}
	}
	// A subscription that matches nothing is exit 1 (issue 35), naming it.
	if code, _, errOut := f.runIn(nil, "preview", "--subscription", "sub_nobody"); code != 1 || !strings.Contains(errOut, "sub_nobody") {
		t.Errorf("preview of no subscription: exit %d, %q; want 1 naming it", code, errOut)
	}
	if code, _, errOut := f.runIn([]string{"NOTICE_KEY_SECRET="}, "preview", "--subscription", subID(1)); code != 2 || !strings.Contains(errOut, "NOTICE_KEY_SECRET") {
		t.Errorf("no secret: exit %d, %q", code, errOut)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 || f.ledgerCount() != 0 || f.smtp.Total() != 0 {
		t.Fatalf("a refused preview wrote %d files, %d ledger rows, sent %d", len(entries), f.ledgerCount(), f.smtp.Total())
	}
}
