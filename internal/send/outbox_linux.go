package send

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// write puts raw into <dir>/name and makes it durable when o.sync(): the
// file is written, fsynced, then put into place (linked, or renamed from a
// temporary name), then the directory fsynced.
//
// It works on descriptors directly, relative to the directory's, rather
// than through *os.File and paths: on this path an *os.File costs a failed
// epoll registration, an allocation and a cleanup per message, a path a
// walk of every component, and the file's mode is given at creation
// (chmod only when the umask would strip it). On tmpfs that leaves four
// system calls a message: open, write, link, close (or open, write,
// close, rename without O_TMPFILE).
func (o *Outbox) write(name string, raw []byte) error {
	dirfd, err := o.openDir()
	if err != nil {
		return err
	}
	defer o.dirMu.RUnlock()
	if o.tmpfile {
		err = o.writeLinked(dirfd, name, raw)
	} else {
		err = o.writeRenamed(dirfd, name, raw)
	}
	if err == nil && o.sync() {
		err = o.dirFile.Sync()
	}
	return err
}

// writeLinked writes raw to an unnamed file in the directory and links it
// as name; a name already taken (a resend) is replaced by a rename.
func (o *Outbox) writeLinked(dirfd int, name string, raw []byte) error {
	fd, err := openatRetry(dirfd, ".", unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC)
	if err != nil {
		return o.pathError("open", ".", err)
	}
	if err := o.fill(fd, raw); err != nil {
		_ = unix.Close(fd)
		return o.pathError(err.Op, name, err.Err)
	}
	err = unix.Linkat(fd, "", dirfd, name, unix.AT_EMPTY_PATH)
	if err == unix.EEXIST {
		err = o.replace(fd, dirfd, name)
	}
	if err != nil {
		_ = unix.Close(fd)
		return o.pathError("link", name, err)
	}
	if err := unix.Close(fd); err != nil {
		_ = unix.Unlinkat(dirfd, name, 0)
		return o.pathError("close", name, err)
	}
	return nil
}

// replace puts the unnamed file fd in place of the existing name: linked
// under a temporary name, then renamed over it, so a reader sees the old
// file or the new one, whole.
func (o *Outbox) replace(fd, dirfd int, name string) error {
	for range 100 {
		tmp := o.tempName(name)
		err := unix.Linkat(fd, "", dirfd, tmp, unix.AT_EMPTY_PATH)
		if err == unix.EEXIST || err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
			_ = unix.Unlinkat(dirfd, tmp, 0)
			return err
		}
		return nil
	}
	return unix.EEXIST
}

// writeRenamed writes raw under a new temporary name and renames it to
// name.
func (o *Outbox) writeRenamed(dirfd int, name string, raw []byte) error {
	tmp, fd, err := o.create(dirfd, name)
	if err != nil {
		return err
	}
	if err := o.fill(fd, raw); err != nil {
		_ = unix.Close(fd)
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return o.pathError(err.Op, tmp, err.Err)
	}
	if err := unix.Close(fd); err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return o.pathError("close", tmp, err)
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return &os.LinkError{Op: "rename", Old: filepath.Join(o.dir, tmp), New: filepath.Join(o.dir, name), Err: err}
	}
	return nil
}

// create opens a new temporary file for name, exclusively: a name left
// by a crashed process, or taken by another Outbox on the same directory,
// is skipped.
func (o *Outbox) create(dirfd int, name string) (tmp string, fd int, err error) {
	for range 100 {
		tmp = o.tempName(name)
		fd, err = openatRetry(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return "", -1, o.pathError("open", tmp, err)
		}
		return tmp, fd, nil
	}
	return "", -1, o.pathError("open", tmp, err)
}

// openatRetry opens path relative to dirfd with mode 0640, again after
// an interruption.
func openatRetry(dirfd int, path string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, path, flags, outboxFileMode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// pathError is an *os.PathError on the file name in the directory.
func (o *Outbox) pathError(op, name string, err error) error {
	return &os.PathError{Op: op, Path: filepath.Join(o.dir, name), Err: err}
}

// fill writes raw to fd, then fsyncs and chmods it as configured. Its
// error names the operation that failed.
func (o *Outbox) fill(fd int, raw []byte) *os.PathError {
	for len(raw) > 0 {
		n, err := unix.Write(fd, raw)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			return &os.PathError{Op: "write", Err: err}
		}
		raw = raw[n:]
	}
	if o.sync() {
		if err := retryEINTR(func() error { return unix.Fsync(fd) }); err != nil {
			return &os.PathError{Op: "fsync", Err: err}
		}
	}
	if o.chmod {
		if err := retryEINTR(func() error { return unix.Fchmod(fd, outboxFileMode) }); err != nil {
			return &os.PathError{Op: "chmod", Err: err}
		}
	}
	return nil
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// probeTmpfile reports whether the directory takes an unnamed file that
// this process may link by descriptor: O_TMPFILE needs Linux 3.11 and a
// file system that has it, linkat AT_EMPTY_PATH without
// CAP_DAC_READ_SEARCH Linux 6.10. It links and removes one empty file.
func (o *Outbox) probeTmpfile() bool {
	dirfd, err := o.openDir()
	if err != nil {
		return false
	}
	defer o.dirMu.RUnlock()
	fd, err := openatRetry(dirfd, ".", unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	probe := o.tempName("probe")
	if unix.Linkat(fd, "", dirfd, probe, unix.AT_EMPTY_PATH) != nil {
		return false
	}
	return unix.Unlinkat(dirfd, probe, 0) == nil
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
