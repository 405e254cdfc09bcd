package send

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Outbox is a Sender that writes each message to a file, <key>.eml, in one
// directory, for a relay, a demo or a test to pick up. Each file appears
// atomically: it is written under a temporary name in the same directory
// and renamed into place, so a reader never sees a partial message. A
// second send of the same key replaces the file.
//
// An Outbox is safe for concurrent use.
type Outbox struct {
	dir string

	// dirMu guards dirFile: the directory, opened once for the fsync that
	// makes each rename durable (an open and a close per message cost a
	// tenth of a send on tmpfs).
	dirMu   sync.Mutex
	dirFile *os.File

	// Sync makes Send fsync the file and the directory before it returns,
	// so that an accepted message survives a crash. NewOutbox sets it;
	// clear it (before the first Send) in tests and benchmarks.
	Sync bool
}

var _ Sender = (*Outbox)(nil)

// NewOutbox returns an Outbox writing to dir, which it creates (mode 0750)
// if needed. Sync is on.
func NewOutbox(dir string) (*Outbox, error) {
	if dir == "" {
		return nil, errors.New("send: outbox directory is empty")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("send: outbox: %w", err)
	}
	return &Outbox{dir: dir, Sync: true}, nil
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

func (o *Outbox) write(name string, raw []byte) (err error) {
	f, err := os.CreateTemp(o.dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(raw); err != nil {
		return err
	}
	if o.Sync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Chmod(0o640); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, filepath.Join(o.dir, name)); err != nil {
		return err
	}
	if o.Sync {
		d, err := o.dirHandle()
		if err != nil {
			return err
		}
		return d.Sync()
	}
	return nil
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
