package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scan suppress add|import|list|remove and scan undelivered, end to end
// through run(...): suppressed recipients are not mailed, nothing printed
// holds an address, and undelivered lists exactly the unreached.
func TestSuppressAndUndelivered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, "")
	if code, out, errOut := f.runIn(nil, "suppress", "add", "--email", "User1@Example.NET", "--reason", "court order"); code != 0 || !strings.Contains(out, `"added":true`) || strings.Contains(out, "@") {
		t.Fatalf("add: %d %s %s", code, out, errOut)
	}
	csv := filepath.Join(t.TempDir(), "mailgun.csv")
	if err := os.WriteFile(csv, []byte("address,code,error,created_at\nuser2@example.org,550,No such mailbox,\nbroken,550,,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := f.runIn(nil, "suppress", "import", "--from", csv, "--channel", "email")
	if code != 0 || !strings.Contains(out, `"added":1`) || !strings.Contains(out, `"invalid_lines":[3]`) {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	code, out, errOut = f.runIn(nil, "suppress", "list")
	if code != 0 || strings.Count(out, "\n") != 2 || strings.Contains(out, "@") || strings.Contains(out, "user") || !strings.Contains(errOut, `"email":2`) {
		t.Fatalf("list: %d %s %s", code, out, errOut)
	}
	s, _ := f.passIn(nil)
	if s.SuppressedAddress != 2 || s.Sent != 2 {
		t.Fatalf("pass: %+v", s)
	}
	got := f.received()
	if got[f.msgID(subID(1))] != 0 || got[f.msgID(subID(2))] != 0 || got[f.msgID(subID(3))] != 1 || got[f.msgID(subID(4))] != 1 {
		t.Fatalf("received %v", got)
	}
	code, out, _ = f.runIn(nil, "undelivered", "--format", "csv")
	want := "subscription_id,kind,period_start,revision,channels,reason,at\n"
	if code != 0 || !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 3 ||
		!strings.Contains(out, subID(1)+","+testKind+","+f.periodStart()+",0,email,suppressed,") || !strings.Contains(out, subID(2)+",") || strings.Contains(out, "@") {
		t.Fatalf("undelivered: %d\n%s", code, out)
	}
	if code, out, _ = f.runIn(nil, "suppress", "remove", "--email", "user1@example.net", "--reason", "order lifted"); code != 0 || !strings.Contains(out, `"removed":true`) {
		t.Fatalf("remove: %d %s", code, out)
	}
	for _, args := range [][]string{
		{"suppress"}, {"suppress", "add", "--email", "a@b.c"}, {"suppress", "add", "--phone", "4155550100", "--reason", "x"},
		{"suppress", "add", "--email", "a@b.c", "--phone", "+14155550100", "--reason", "x"},
		{"suppress", "import", "--from", csv}, {"undelivered", "--format", "xml"}, {"undelivered", "--since", "soon"},
	} {
		if code, _, errOut := f.runIn(nil, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}
