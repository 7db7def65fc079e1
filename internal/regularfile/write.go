package regularfile

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// TempPrefix starts the name of the temporary file that Create writes next to its
// target. The name starts with a dot so that listings skip it; a run directory's
// cleaner removes what an interrupted write left under it.
const TempPrefix = ".tmp-"

// CheckTarget returns nil if path names nothing yet or a regular file that may be
// replaced, and otherwise an error naming path and what is there: a symbolic link (not
// followed: Locus never writes through a link), a directory, a FIFO, a device or a
// socket.
func CheckTarget(path string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: unwrap(err)}
	}
	if !info.Mode().IsRegular() {
		return notRegular(path, info.Mode())
	}
	return nil
}

// CheckDirTarget is CheckTarget for a directory that is written whole and renamed into
// place (a checkpoint): nil if path names nothing yet or a directory, not through a
// symbolic link.
func CheckDirTarget(path string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: unwrap(err)}
	}
	if !info.IsDir() {
		return &fs.PathError{Op: "write", Path: path, Err: notRegularError{"not a directory", kind(info.Mode())}}
	}
	return nil
}

// File is a regular file being written in place of another: the bytes go to a
// temporary file in the target's folder, and Commit renames it over the target, so
// that the target holds either its previous content or the complete new one. Close
// without Commit removes the temporary file.
type File struct {
	f      *os.File
	bw     *bufio.Writer
	path   string
	tmp    string
	closed bool
}

// Create starts writing a new regular file at path, whose folder must exist. A path
// that CheckTarget refuses is an error; so is one whose folder cannot hold a
// temporary file. Errors name path.
func Create(path string) (*File, error) {
	if err := CheckTarget(path); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(path)
	if base == "" {
		return nil, &fs.PathError{Op: "write", Path: path, Err: errors.New("no file name")}
	}
	for range 100 {
		var r [6]byte
		rand.Read(r[:])
		tmp := filepath.Join(dir, TempPrefix+base+"-"+hex.EncodeToString(r[:]))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "write", Path: path, Err: unwrap(err)}
		}
		return &File{f: f, bw: bufio.NewWriterSize(f, 1<<20), path: path, tmp: tmp}, nil
	}
	return nil, &fs.PathError{Op: "write", Path: path, Err: errors.New("no free temporary name in its folder")}
}

// Name returns the path the file will have once committed.
func (f *File) Name() string { return f.path }

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	if f.closed {
		return 0, &fs.PathError{Op: "write", Path: f.path, Err: fs.ErrClosed}
	}
	return f.bw.Write(p)
}

// Commit syncs the temporary file and renames it over the target, checking the target
// again first, then syncs the folder. On an error the target is left as it was.
func (f *File) Commit() error {
	if f.closed {
		return &fs.PathError{Op: "write", Path: f.path, Err: fs.ErrClosed}
	}
	f.closed = true
	err := f.bw.Flush()
	if err == nil {
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = CheckTarget(f.path); err != nil {
			os.Remove(f.tmp)
			return err
		}
		err = os.Rename(f.tmp, f.path)
	}
	if err != nil {
		os.Remove(f.tmp)
		return &fs.PathError{Op: "write", Path: f.path, Err: unwrap(err)}
	}
	return SyncDir(filepath.Dir(f.path))
}

// Close removes the temporary file of a File not committed; after Commit it does
// nothing. It is safe to defer.
func (f *File) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.f.Close()
	return os.Remove(f.tmp)
}

// WriteFile replaces path with a regular file holding what write writes (see Create
// and Commit): nothing is written where CheckTarget refuses, and an error from write
// leaves path as it was. Its errors name path.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := write(f); err != nil {
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Path == path {
			return err
		}
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return f.Commit()
}

// OpenFile is os.OpenFile for a file that must be a regular file: it never follows a
// symbolic link at path and never opens a FIFO or a device (the open does not block,
// and the open file is checked), with an error naming path and what is there. Locus
// opens the files it appends to or locks in a run directory with it.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := CheckTarget(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, flag|oNoFollow|syscall.O_NONBLOCK, perm)
	if err != nil {
		if info, lerr := os.Lstat(path); lerr == nil && !info.Mode().IsRegular() {
			return nil, notRegular(path, info.Mode()) // swapped in since the check
		}
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = notRegular(path, info.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Within reports whether path, once symbolic links in its folders are resolved, lies
// in dir or below it (path being dir included). The folders are compared as files, so
// a second name for dir (a link, a bind mount) is seen through. A path or dir that
// cannot be resolved is not within.
func Within(path, dir string) bool {
	di, err := os.Stat(dir)
	if err != nil || !di.IsDir() {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	// Resolve the deepest folder that exists; the names below it are created by the
	// write and hold no link.
	cur := abs
	for {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			cur = r
			break
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return false
		}
		cur = parent
	}
	for {
		if fi, err := os.Stat(cur); err == nil && os.SameFile(fi, di) {
			return true
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return false
		}
		cur = parent
	}
}

// SyncDir makes a folder's entries durable. Windows cannot sync folders; its renames
// are durable enough for our purpose.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// ErrNotRegular is wrapped by the errors of a path that holds something other than a
// regular file where one is read or written.
var ErrNotRegular = errors.New("not a regular file")

// notRegularError names what is at a path where a regular file is wanted.
type notRegularError struct{ want, kind string }

func (e notRegularError) Error() string {
	return e.want + " (" + e.kind + "); left as it is"
}
func (e notRegularError) Is(target error) bool { return target == ErrNotRegular }

func notRegular(path string, m fs.FileMode) error {
	return &fs.PathError{Op: "write", Path: path, Err: notRegularError{"not a regular file", kind(m)}}
}

// unwrap returns the cause of a *PathError (whose path may be a temporary name), or err.
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
