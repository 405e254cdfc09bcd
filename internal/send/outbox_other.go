//go:build !linux

package send

import (
	"os"
	"path/filepath"
)

// write puts raw into <dir>/name: created under a temporary name, written,
// fsynced (when o.sync()), chmod-ed to 0640, renamed into place, then the
// directory fsynced. outbox_linux.go does the same on bare descriptors.
func (o *Outbox) write(name string, raw []byte) (err error) {
	tmp := filepath.Join(o.dir, o.tempName(name))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, outboxFileMode)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(raw); err != nil {
		return err
	}
	if o.sync() {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Chmod(outboxFileMode); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, filepath.Join(o.dir, name)); err != nil {
		return err
	}
	if o.sync() {
		return o.syncDir()
	}
	return nil
}

// syncDir fsyncs the directory, making the renames before it durable.
func (o *Outbox) syncDir() error {
	if _, err := o.openDir(); err != nil {
		return err
	}
	defer o.dirMu.RUnlock()
	return o.dirFile.Sync()
}

// inMemoryFS reports false: only Linux tells tmpfs apart.
func inMemoryFS(string) bool { return false }

// umaskStrips reports true: each file is chmod-ed.
func umaskStrips(uint32) bool { return true }

// probeTmpfile reports false: O_TMPFILE is Linux's.
func (o *Outbox) probeTmpfile() bool { return false }
