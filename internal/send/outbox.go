package send

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Outbox is a Sender that writes each message to a file, <key>.eml, in one
// directory, for a relay, a demo or a test to pick up. Each file appears
// atomically: it is written under a temporary name in the same directory
// (".<key>.eml.<tag>.tmp") and renamed into place, so a reader never sees a
// partial message. A second send of the same key replaces the file. Files
// get mode 0640 whatever the process's umask.
//
// An Outbox is safe for concurrent use.
type Outbox struct {
	dir string

	// dirMu guards dirFile: the directory, opened once for the fsync that
	// makes each rename durable (an open and a close per message cost a
	// tenth of a send on tmpfs).
	dirMu   sync.Mutex
	dirFile *os.File

	// inMemory: the directory is on tmpfs or ramfs, where nothing survives
	// a crash of the machine and fsync is a no-op that still costs a
	// system call; Send never calls it there, whatever Sync says.
	inMemory bool
	// chmod: the umask would strip bits of 0640 from a new file (or could
	// not be read), so each file is chmod-ed after it is created.
	chmod bool
	// tag and seq make each temporary name unique without a random draw
	// per message: a random prefix per Outbox, then a counter.
	tag string
	seq atomic.Uint64

	// Sync makes Send fsync the file (before its rename) and the directory
	// (after it) before it returns, so that an accepted message survives a
	// crash of the machine, and a file that appears after one is whole.
	// NewOutbox sets it; clear it (before the first Send) in tests and
	// benchmarks. On tmpfs and ramfs it changes nothing: no fsync can
	// make a file there outlive the machine.
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
	return &Outbox{
		dir:      dir,
		Sync:     true,
		inMemory: inMemoryFS(dir),
		chmod:    umaskStrips(outboxFileMode),
		tag:      hex.EncodeToString(tag[:]),
	}, nil
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

// tempName returns a new temporary path for the file name.
func (o *Outbox) tempName(name string) string {
	return filepath.Join(o.dir, "."+name+"."+o.tag+strconv.FormatUint(o.seq.Add(1), 36)+".tmp")
}

// syncDir fsyncs the directory, making the renames before it durable.
func (o *Outbox) syncDir() error {
	d, err := o.dirHandle()
	if err != nil {
		return err
	}
	return d.Sync()
}

// dirHandle returns the directory, opening it on first use.
func (o *Outbox) dirHandle() (*os.File, error) {
	o.dirMu.Lock()
	defer o.dirMu.Unlock()
	if o.dirFile == nil {
		d, err := os.Open(o.dir)
		if err != nil {
			return nil, err
		}
		o.dirFile = d
	}
	return o.dirFile, nil
}

// Close releases the directory handle; the Outbox stays usable (a later
// Send opens it again). It returns nil.
func (o *Outbox) Close() error {
	o.dirMu.Lock()
	defer o.dirMu.Unlock()
	if o.dirFile != nil {
		_ = o.dirFile.Close()
		o.dirFile = nil
	}
	return nil
}
