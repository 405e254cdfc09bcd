package send

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Outbox is a Sender that writes each message to a file, <key>.eml, in one
// directory, for a relay, a demo or a test to pick up. Each file appears
// atomically, whole: where the file system supports it (Linux: tmpfs,
// ext4, xfs, btrfs) it is written as an unnamed file (O_TMPFILE) and then
// linked under its name; elsewhere it is written under a temporary name in
// the same directory (".<key>.eml.<tag>.tmp") and renamed into place. A
// reader never sees a partial message. A second send of the same key
// replaces the file, atomically. Files get mode 0640 whatever the
// process's umask.
//
// The directory is opened once (and again after Close) and every file is
// created relative to that handle: a directory renamed while the Outbox
// writes keeps receiving the files, and one removed makes Send fail.
//
// An Outbox is safe for concurrent use.
type Outbox struct {
	dir string

	// dirMu guards dirFile: the directory, opened once for the whole
	// Outbox (an open and a close per message cost a tenth of a send on
	// tmpfs; a path walk per file, a few percent more). Send holds it for
	// reading, Close for writing.
	dirMu   sync.RWMutex
	dirFile *os.File
	dirFD   int // dirFile's descriptor

	// inMemory: the directory is on tmpfs or ramfs, where nothing survives
	// a crash of the machine and fsync is a no-op that still costs a
	// system call; Send never calls it there, whatever Sync says.
	inMemory bool
	// chmod: the umask would strip bits of 0640 from a new file (or could
	// not be read), so each file is chmod-ed after it is created.
	chmod bool
	// tmpfile: the directory takes unnamed files (O_TMPFILE) that the
	// process may link by descriptor (linkat AT_EMPTY_PATH, unprivileged
	// since Linux 6.10 for a file the caller opened): a new file then
	// costs no temporary name and no rename. Probed by NewOutbox.
	tmpfile bool
	// tag and seq make each temporary name unique without a random draw
	// per message: a random prefix per Outbox, then a counter.
	tag string
	seq atomic.Uint64

	// Sync makes Send fsync the file (before it is linked or renamed into
	// place) and the directory (after) before it returns, so that an
	// accepted message survives a crash of the machine, and a file that
	// appears after one is whole. NewOutbox sets it; clear it (before the
	// first Send) in tests and benchmarks. On tmpfs and ramfs it changes
	// nothing: no fsync can make a file there outlive the machine.
	Sync bool
}

var _ Sender = (*Outbox)(nil)

// outboxFileMode is the mode of every file the Outbox writes.
const outboxFileMode = 0o640

// NewOutbox returns an Outbox writing to dir, which it creates (mode 0750)
// if needed. Sync is on.
func NewOutbox(dir string) (*Outbox, error) {
	if dir == "" {
		return nil, errors.New("send: outbox directory is empty")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("send: outbox: %w", err)
	}
	var tag [4]byte
	_, _ = rand.Read(tag[:]) // never fails (crypto/rand); uniqueness rests on O_EXCL anyway
	o := &Outbox{
		dir:      dir,
		Sync:     true,
		inMemory: inMemoryFS(dir),
		chmod:    umaskStrips(outboxFileMode),
		tag:      hex.EncodeToString(tag[:]),
	}
	if _, err := o.openDir(); err != nil {
		return nil, fmt.Errorf("send: outbox: %w", err)
	}
	o.dirMu.RUnlock()
	o.tmpfile = o.probeTmpfile()
	return o, nil
}

// Dir returns the directory the Outbox writes to.
func (o *Outbox) Dir() string { return o.dir }

// Send writes m.Raw to <dir>/<key>.eml. Receipt.ProviderID is
// "outbox:<key>.eml". Every failure is Transient: a file that was not
// renamed into place was not delivered.
func (o *Outbox) Send(ctx context.Context, m *Message) (Receipt, error) {
	if err := ctx.Err(); err != nil {
		return Receipt{}, &Error{Class: Transient, Err: err}
	}
	key := m.Notice.Key
	if key == "" || strings.Trim(key, "0123456789abcdefABCDEF") != "" {
		return Receipt{}, &Error{Class: Permanent, Err: errors.New("outbox: key is not hex")}
	}
	name := key + ".eml"
	if err := o.write(name, m.Raw); err != nil {
		return Receipt{}, &Error{Class: Transient, Err: fmt.Errorf("outbox: %w", err)}
	}
	return Receipt{ProviderID: "outbox:" + name}, nil
}

// sync reports whether Send fsyncs: Sync is on and the directory is on a
// file system that outlives the machine.
func (o *Outbox) sync() bool { return o.Sync && !o.inMemory }

// tempName returns a new temporary name, relative to the directory, for
// the file name.
func (o *Outbox) tempName(name string) string {
	return "." + name + "." + o.tag + strconv.FormatUint(o.seq.Add(1), 36) + ".tmp"
}

// openDir returns the directory's descriptor, opening the directory if
// Close released it, with dirMu held for reading: the caller unlocks it
// (only on success).
func (o *Outbox) openDir() (int, error) {
	o.dirMu.RLock()
	if o.dirFile != nil {
		return o.dirFD, nil
	}
	o.dirMu.RUnlock()
	o.dirMu.Lock()
	if o.dirFile == nil {
		d, err := os.Open(o.dir)
		if err != nil {
			o.dirMu.Unlock()
			return -1, err
		}
		o.dirFile, o.dirFD = d, int(d.Fd())
	}
	o.dirMu.Unlock()
	return o.openDir()
}

// Close releases the directory handle; the Outbox stays usable (a later
// Send opens it again). It returns nil.
func (o *Outbox) Close() error {
	o.dirMu.Lock()
	defer o.dirMu.Unlock()
	if o.dirFile != nil {
		_ = o.dirFile.Close()
		o.dirFile, o.dirFD = nil, -1
	}
	return nil
}
