package send

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func outboxTestMessage(key string) *Message {
	return &Message{Notice: Notice{Key: key}, Raw: []byte("Subject: x\r\n\r\nbody\r\n")}
}

// Every file is 0640, whether the umask lets the mode through at creation
// or each file is chmod-ed, linked from an unnamed file or renamed from a
// temporary one, new or replacing one; no temporary file is left behind.
func TestOutboxFileMode(t *testing.T) {
	t.Parallel()
	for _, tc := range outboxPaths(t) {
		for _, chmod := range []bool{false, true} {
			dir := t.TempDir()
			o := tc.open(t, dir)
			o.chmod = chmod || o.chmod
			for _, body := range []string{"first", "second"} {
				m := outboxTestMessage("ab01")
				m.Raw = append(m.Raw, body...)
				if _, err := o.Send(t.Context(), m); err != nil {
					t.Fatal(err)
				}
				entries, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(entries) != 1 || entries[0].Name() != "ab01.eml" {
					t.Fatalf("%s, chmod %v: directory holds %v, want only ab01.eml", tc.name, chmod, entries)
				}
				p := filepath.Join(dir, "ab01.eml")
				if b, _ := os.ReadFile(p); !strings.HasSuffix(string(b), body) {
					t.Errorf("%s, chmod %v: ab01.eml holds %q, want the %s send", tc.name, chmod, b, body)
				}
				st, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != outboxFileMode {
					t.Errorf("%s, chmod %v: mode %v, want %v", tc.name, chmod, st.Mode().Perm(), os.FileMode(outboxFileMode))
				}
			}
			_ = o.Close()
		}
	}
}

// outboxPath is one of the ways an Outbox puts a file in place.
type outboxPath struct {
	name string
	open func(t *testing.T, dir string) *Outbox
}

// outboxPaths are the ways this machine's temporary directory supports:
// renamed from a temporary name always, linked from an unnamed file
// (O_TMPFILE) where the probe found it.
func outboxPaths(t *testing.T) []outboxPath {
	t.Helper()
	open := func(tmpfile bool) func(t *testing.T, dir string) *Outbox {
		return func(t *testing.T, dir string) *Outbox {
			o, err := NewOutbox(dir)
			if err != nil {
				t.Fatal(err)
			}
			o.tmpfile = o.tmpfile && tmpfile
			return o
		}
	}
	paths := []outboxPath{{"renamed", open(false)}}
	if o := open(true)(t, t.TempDir()); o.tmpfile {
		paths = append(paths, outboxPath{"linked", open(true)})
	} else {
		t.Logf("no O_TMPFILE linking in %s: only the rename path is tested", os.TempDir())
	}
	return paths
}

// Where the kernel lets a process link its own unnamed file (Linux 6.10
// and later, on tmpfs, ext4, xfs, btrfs), the Outbox does.
func TestOutboxProbesTmpfile(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("O_TMPFILE is Linux's")
	}
	dir := t.TempDir()
	o, err := NewOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if !o.tmpfile {
		t.Skipf("%s: no O_TMPFILE linking (kernel before 6.10 or a file system without it)", dir)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the probe left %v", entries)
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
	o.tmpfile = false // the path that names temporary files
	next := filepath.Join(dir, ".ab02.eml."+o.tag+strconv.FormatUint(o.seq.Load()+1, 36)+".tmp")
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
