package train

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/locusml/locus/internal/regularfile"
)

// LockFile is the advisory lock of a run directory: a training process holds it for as
// long as it writes there (Loop.Run), and its content is the holder's process id.
const LockFile = "LOCK"

// ErrRunInUse is wrapped by the error of a Loop whose Dir another process (or another
// Loop) is training in.
var ErrRunInUse = errors.New("run directory in use")

// inUseError is an error that is ErrRunInUse without repeating it in its text.
type inUseError string

func (e inUseError) Error() string        { return string(e) }
func (e inUseError) Is(target error) bool { return target == ErrRunInUse }

// dirLock is a held LockFile.
type dirLock struct {
	f    *os.File
	path string
}

// lockRunDir takes the lock of the run directory dir, which must exist. The lock is an
// flock(2) on LockFile where the system has one, so it dies with its process: a lock
// file left by a killed process is stale and simply taken over. The file is removed
// when the lock is released. A LockFile that is not a regular file (a symlink, even a
// dangling one) is refused, never followed.
func lockRunDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	for range 10 {
		f, err := regularfile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("train: lock: %w", err)
		}
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !held {
			f.Close()
			return nil, inUseError(fmt.Sprintf("train: run directory %s in use by %s (%s)", dir, lockHolder(path), path))
		}
		// The holder removes the file before it unlocks: a lock on a file that is no
		// longer the one at path is worthless, so try again.
		fi, err1 := f.Stat()
		pi, err2 := os.Lstat(path)
		if err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
			unlockFile(f)
			f.Close()
			continue
		}
		f.Truncate(0)
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		return &dirLock{f: f, path: path}, nil
	}
	return nil, inUseError(fmt.Sprintf("train: run directory %s: %s keeps changing", dir, path))
}

// lockHolder names the process that holds the lock file at path, from its content.
// The holder writes its pid just after taking the lock, so an empty file is read again
// for a moment.
func lockHolder(path string) string {
	for range 20 {
		b, err := regularfile.ReadFile(path, maxLatestBytes)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
			if pid == os.Getpid() {
				return fmt.Sprintf("pid %d (this process)", pid)
			}
			return fmt.Sprintf("pid %d", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return "another process"
}

// unlock removes the lock file and releases the lock.
func (l *dirLock) unlock() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path)
	unlockFile(l.f)
	l.f.Close()
	l.f = nil
}

// LockDir takes the lock of the directory dir, which must exist, as Run takes its run
// directory's (LockFile, held until release, refused while another process holds it
// with an error that is ErrRunInUse). It is for a program that owns a folder of runs,
// such as a sweep, so that two of it never work in one folder at once.
func LockDir(dir string) (release func(), err error) {
	l, err := lockRunDir(dir)
	if err != nil {
		return nil, err
	}
	return l.unlock, nil
}
