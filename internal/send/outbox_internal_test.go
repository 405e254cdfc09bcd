package send

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func outboxTestMessage(key string) *Message {
	return &Message{Notice: Notice{Key: key}, Raw: []byte("Subject: x\r\n\r\nbody\r\n")}
}

// Every file is 0640, whether the umask lets the mode through at creation
// or each file is chmod-ed; no temporary file is left behind.
func TestOutboxFileMode(t *testing.T) {
	t.Parallel()
	for _, chmod := range []bool{false, true} {
		dir := t.TempDir()
		o, err := NewOutbox(dir)
		if err != nil {
			t.Fatal(err)
		}
		o.chmod = chmod || o.chmod
		if _, err := o.Send(t.Context(), outboxTestMessage("ab01")); err != nil {
			t.Fatal(err)
		}
		_ = o.Close()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "ab01.eml" {
			t.Fatalf("chmod %v: directory holds %v, want only ab01.eml", chmod, entries)
		}
		st, err := os.Stat(filepath.Join(dir, "ab01.eml"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != outboxFileMode {
			t.Errorf("chmod %v: mode %v, want %v", chmod, st.Mode().Perm(), os.FileMode(outboxFileMode))
		}
	}
}

// umaskStrips agrees with the mode a new file actually gets.
func TestUmaskStrips(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("umask is read only on Linux")
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o777); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	umask := uint32(0o777 &^ st.Mode().Perm())
	for _, mode := range []uint32{0o640, 0o600, 0o644, 0o666, 0o777} {
		if got, want := umaskStrips(mode), umask&mode != 0; got != want {
			t.Errorf("umaskStrips(%o) = %v with umask %o", mode, got, umask)
		}
	}
}

// A temporary name already taken (a file left by a crashed process) is
// skipped, not overwritten or fatal.
func TestOutboxTempNameTaken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o, err := NewOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	o.Sync = false
	next := filepath.Join(dir, ".ab02.eml."+o.tag+"1.tmp")
	if err := os.WriteFile(next, []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Send(t.Context(), outboxTestMessage("ab02")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(next); string(b) != "someone else's" {
		t.Errorf("the taken temporary file now holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ab02.eml")); !strings.HasPrefix(string(b), "Subject: x") {
		t.Errorf("ab02.eml holds %q", b)
	}
}

// On tmpfs no fsync can make a file outlive the machine, so Send skips
// them; elsewhere Sync decides.
func TestOutboxInMemory(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("tmpfs is told apart only on Linux")
	}
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		t.Skip("no /dev/shm")
	}
	dir, err := os.MkdirTemp("/dev/shm", "outbox-test-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	o, err := NewOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !o.inMemory || o.sync() {
		t.Errorf("outbox on /dev/shm: inMemory %v, sync() %v; want true, false", o.inMemory, o.sync())
	}
	if _, err := o.Send(t.Context(), outboxTestMessage("ab03")); err != nil {
		t.Fatal(err)
	}
	o2, err := NewOutbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if o2.sync() != !o2.inMemory {
		t.Errorf("Sync on, inMemory %v: sync() = %v", o2.inMemory, o2.sync())
	}
}
