// Package regularfile is the one way Locus reads and writes files: only regular files.
//
// Reading (Open, ReadFile), a file must be a regular file of a bounded size, so that a
// path naming a FIFO, a device (a symlink to /dev/zero) or a file larger than its reader
// expects is an error instead of a hang or an unbounded allocation. The mode is checked
// on the path (symlinks followed) before opening, with a non-blocking open so that a
// FIFO swapped in between does not block, and again on the open file.
//
// Writing (WriteFile, Create, OpenFile), the target must name nothing yet or a regular
// file: a symbolic link (never followed), a directory, a FIFO, a device or a socket is
// refused with an error naming the path and what it is, and is left as it was. New
// content is written to a temporary file in the target's folder, synced and renamed over
// the target, so a crash leaves the old file or the new one. Within tells whether an
// output path falls inside a folder that must not be written, such as the run a command
// reads.
package regularfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Open opens the regular file at path for reading and returns it with its size. It
// refuses anything else (a directory, a FIFO, a device or socket, even behind a
// symlink) and a file of more than limit bytes, with an error naming path.
func Open(path string, limit int64) (*os.File, int64, error) {
	return openChecked(path, limit, os.Stat, 0)
}

// OpenNoFollow is Open for a file whose path must not be a symbolic link (a file inside
// a run directory, which a link could point at someone else's file): a path that is
// one is refused, with an error naming it, and the file is opened with O_NOFOLLOW so
// that a link swapped in after the check is refused too. Links in the directories
// above the file are followed.
func OpenNoFollow(path string, limit int64) (*os.File, int64, error) {
	return openChecked(path, limit, os.Lstat, oNoFollow)
}

// openChecked checks what stat says of path, opens it without blocking (a FIFO would
// block) with the extra flag, and checks the open file again, which is the one read.
func openChecked(path string, limit int64, stat func(string) (fs.FileInfo, error), flag int) (*os.File, int64, error) {
	info, err := stat(path)
	if err != nil {
		return nil, 0, err
	}
	if err := check(path, info, limit); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|flag, 0)
	if err != nil {
		return nil, 0, err
	}
	if info, err = f.Stat(); err == nil {
		err = check(path, info, limit)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, info.Size(), nil
}

// ReadFile reads the whole regular file at path, of at most limit bytes (see Open).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, size, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, size, limit)
}

// ReadFileNoFollow reads the whole regular file at path, of at most limit bytes, refusing
// a symbolic link (see OpenNoFollow).
func ReadFileNoFollow(path string, limit int64) ([]byte, error) {
	f, size, err := OpenNoFollow(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, size, limit)
}

// readAll reads f, of size bytes when it was opened, refusing more than limit.
func readAll(f *os.File, path string, size, limit int64) ([]byte, error) {
	// The file may grow after the check: read one byte more than allowed to see it.
	b := make([]byte, 0, size+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return nil, tooLarge(path, int64(len(b)), limit)
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

func check(path string, info fs.FileInfo, limit int64) error {
	if !info.Mode().IsRegular() {
		return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file (%s)", kind(info.Mode()))}
	}
	if info.Size() > limit {
		return tooLarge(path, info.Size(), limit)
	}
	return nil
}

func tooLarge(path string, size, limit int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%d bytes, more than the %d this file may have", size, limit)}
}

// kind names a non-regular file mode for an error message.
func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}
