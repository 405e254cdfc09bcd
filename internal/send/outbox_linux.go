package send

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// write puts raw into <dir>/name: created under a temporary name, written,
// fsynced (when o.sync()), renamed into place, then the directory fsynced.
//
// It works on the file descriptor directly rather than through an
// *os.File: on this path an *os.File costs a failed epoll registration,
// an allocation and a cleanup per message, and the file's mode is given
// at creation (chmod only when the umask would strip it). On tmpfs that
// leaves four system calls a message (open, write, close, rename) where
// there were eight.
func (o *Outbox) write(name string, raw []byte) error {
	tmp, fd, err := o.create(name)
	if err != nil {
		return err
	}
	if err := o.fill(tmp, fd, raw); err != nil {
		_ = syscall.Close(fd)
		_ = syscall.Unlink(tmp)
		return err
	}
	if err := syscall.Close(fd); err != nil {
		_ = syscall.Unlink(tmp)
		return &os.PathError{Op: "close", Path: tmp, Err: err}
	}
	if err := syscall.Rename(tmp, filepath.Join(o.dir, name)); err != nil {
		_ = syscall.Unlink(tmp)
		return &os.LinkError{Op: "rename", Old: tmp, New: filepath.Join(o.dir, name), Err: err}
	}
	if o.sync() {
		return o.syncDir()
	}
	return nil
}

// create opens a new temporary file for name, exclusively: a name left
// by a crashed process, or taken by another Outbox on the same directory,
// is skipped.
func (o *Outbox) create(name string) (tmp string, fd int, err error) {
	for range 100 {
		tmp = o.tempName(name)
		fd, err = syscall.Open(tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, outboxFileMode)
		if err == syscall.EINTR || err == syscall.EEXIST {
			continue
		}
		if err != nil {
			return "", -1, &os.PathError{Op: "open", Path: tmp, Err: err}
		}
		return tmp, fd, nil
	}
	return "", -1, &os.PathError{Op: "open", Path: tmp, Err: err}
}

// fill writes raw to fd (the file tmp), then fsyncs and chmods it as
// configured.
func (o *Outbox) fill(tmp string, fd int, raw []byte) error {
	for len(raw) > 0 {
		n, err := syscall.Write(fd, raw)
		if err == syscall.EINTR {
			continue
		}
		if err == nil && n == 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: tmp, Err: err}
		}
		raw = raw[n:]
	}
	if o.sync() {
		if err := retryEINTR(func() error { return syscall.Fsync(fd) }); err != nil {
			return &os.PathError{Op: "fsync", Path: tmp, Err: err}
		}
	}
	if o.chmod {
		if err := retryEINTR(func() error { return syscall.Fchmod(fd, outboxFileMode) }); err != nil {
			return &os.PathError{Op: "chmod", Path: tmp, Err: err}
		}
	}
	return nil
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}

// inMemoryFS reports whether dir is on tmpfs or ramfs.
func inMemoryFS(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	t := uint32(st.Type) // int64 or int32, by architecture
	return t == tmpfsMagic || t == ramfsMagic
}

// The f_type of tmpfs and ramfs (linux/magic.h).
const (
	tmpfsMagic uint32 = 0x01021994
	ramfsMagic uint32 = 0x858458f6
)

// umaskStrips reports whether the process's umask would clear any bit of
// mode on a new file, or cannot be read (/proc/self/status, Linux 4.7+).
func umaskStrips(mode uint32) bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return true
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			return err != nil || uint32(m)&mode != 0
		}
	}
	return true
}
