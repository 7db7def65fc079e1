package train

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/locusml/locus/internal/regularfile"
)

// Temporary names live in the same folder as what they become, so that renames stay on
// one file system and are atomic. They start with a dot so that listings skip them.
const (
	tmpPrefix   = regularfile.TempPrefix // being written; never loaded, removed by cleanStale
	oldPrefix   = ".old-"                // a replaced directory, removed once the new one is in place
	trashPrefix = ".trash-"              // a pruned checkpoint, being removed
)

// testHookWriter, when set by tests, wraps the writer of every file written by this
// package, to simulate a write that fails midway.
var testHookWriter func(path string, w io.Writer) io.Writer

// writeFileSynced creates path (which must not exist), fills it with write, and syncs and
// closes it.
func writeFileSynced(path string, write func(io.Writer) error) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	var w io.Writer = bw
	if testHookWriter != nil {
		w = testHookWriter(path, w)
	}
	if err := write(w); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// writeFileAtomic replaces path with the output of write through regularfile.WriteFile:
// a synced temporary file in the same folder, renamed over path, the folder synced. A
// path holding anything but a regular file (a symlink, a FIFO, a device, a directory)
// is refused and left as it was.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	return regularfile.WriteFile(path, func(w io.Writer) error {
		if testHookWriter != nil {
			w = testHookWriter(path, w)
		}
		return write(w)
	})
}

// writeDirAtomic creates or replaces the directory final with one filled by write. write
// receives a fresh temporary directory next to final and must sync the files it writes.
// The temporary directory is synced and renamed to final; an existing final is first
// moved aside and removed afterwards. A crash leaves either the old or the new directory
// under final, except in the instant between the two renames, when the old one waits
// under a ".old-" name that resolveCheckpointDir and cleanStale put back. A final that
// is not a directory (a symlink) is refused and left as it was.
func writeDirAtomic(final string, write func(tmp string) error) error {
	parent, base := filepath.Split(filepath.Clean(final))
	if parent == "" {
		parent = "."
	}
	if err := regularfile.CheckDirTarget(final); err != nil {
		return err
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, tmpPrefix+base+"-*")
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it private
		os.RemoveAll(tmp)
		return err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	var old string
	if _, err := os.Lstat(final); err == nil {
		o, err := os.MkdirTemp(parent, oldPrefix+base+"-*")
		if err != nil {
			return err
		}
		if err := os.Remove(o); err != nil {
			return err
		}
		if err := os.Rename(final, o); err != nil {
			return err
		}
		old = o
	}
	if err := os.Rename(tmp, final); err != nil {
		if old != "" {
			os.Rename(old, final)
		}
		return err
	}
	done = true
	if err := syncDir(parent); err != nil {
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// syncDir makes a directory's entries durable.
func syncDir(dir string) error { return regularfile.SyncDir(dir) }

// removeDir removes a checkpoint directory by renaming it to a ".trash-" name first, so
// that an interrupted removal never leaves a half-deleted directory under its real name.
func removeDir(path string) error {
	parent, base := filepath.Split(filepath.Clean(path))
	if parent == "" {
		parent = "."
	}
	t, err := os.MkdirTemp(parent, trashPrefix+base+"-*")
	if err != nil {
		return err
	}
	if err := os.Remove(t); err != nil {
		return err
	}
	if err := os.Rename(path, t); err != nil {
		return err
	}
	return os.RemoveAll(t)
}

// cleanStale removes what interrupted writes left in dir: temporary files and folders and
// half-removed checkpoints. A directory moved aside by an interrupted replace is put back
// if nothing took its place, and removed otherwise.
func cleanStale(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		switch {
		case strings.HasPrefix(name, tmpPrefix), strings.HasPrefix(name, trashPrefix):
			errs = append(errs, os.RemoveAll(path))
		case strings.HasPrefix(name, oldPrefix):
			orig := oldTarget(name)
			if _, err := os.Lstat(filepath.Join(dir, orig)); errors.Is(err, fs.ErrNotExist) && orig != "" {
				errs = append(errs, os.Rename(path, filepath.Join(dir, orig)))
			} else {
				errs = append(errs, os.RemoveAll(path))
			}
		}
	}
	return errors.Join(errs...)
}

// oldTarget returns the name a ".old-<name>-<random>" entry was moved away from.
func oldTarget(entry string) string {
	s := strings.TrimPrefix(entry, oldPrefix)
	i := strings.LastIndexByte(s, '-')
	if i <= 0 {
		return ""
	}
	return s[:i]
}

// findOld returns a directory moved aside from path by an interrupted replace, or "".
func findOld(path string) string {
	parent, base := filepath.Split(filepath.Clean(path))
	if parent == "" {
		parent = "."
	}
	matches, _ := filepath.Glob(filepath.Join(parent, oldPrefix+globEscape(base)+"-*"))
	for _, m := range matches {
		if oldTarget(filepath.Base(m)) == base {
			return m
		}
	}
	return ""
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}
