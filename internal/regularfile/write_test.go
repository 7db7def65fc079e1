//go:build unix

package regularfile

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// targets makes one of every kind of path a write must not replace, in dir: each
// with the words its error must hold. outside is a file that the links point to.
func targets(t *testing.T, dir, outside string) map[string]string {
	t.Helper()
	m := map[string]string{}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	m[link] = "not a regular file (a symbolic link)"
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(filepath.Dir(outside), "created-through-a-link"), dangling); err != nil {
		t.Fatal(err)
	}
	m[dangling] = "not a regular file (a symbolic link)"
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	m[sub] = "not a regular file (a directory)"
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		m[fifo] = "not a regular file (a named pipe)"
	}
	if os.Geteuid() == 0 {
		// /dev/full's numbers, in a temporary folder: the real /dev is never touched.
		full := filepath.Join(dir, "full")
		if err := syscall.Mknod(full, syscall.S_IFCHR|0o600, 1<<8|7); err == nil {
			m[full] = "not a regular file (a character device)"
		}
	}
	sock := filepath.Join(dir, "sock")
	if l, err := net.Listen("unix", sock); err == nil {
		t.Cleanup(func() { l.Close() })
		m[sock] = "not a regular file (a socket)"
	}
	return m
}

func modes(t *testing.T, paths map[string]string) map[string]fs.FileMode {
	t.Helper()
	m := map[string]fs.FileMode{}
	for p := range paths {
		info, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		m[p] = info.Mode()
	}
	return m
}

// TestWriteRefusesWhatIsNotARegularFile: WriteFile, Create and OpenFile refuse a
// symlink (to a file, or dangling), a directory, a FIFO, a character device and a
// socket with an error naming the path and its kind, and leave each as it was: the
// file a link points to keeps its content, a dangling link's target is not created, and
// nothing blocks on the FIFO.
func TestWriteRefusesWhatIsNotARegularFile(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	outside := filepath.Join(out, "precious.txt")
	if err := os.WriteFile(outside, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := targets(t, dir, outside)
	before := modes(t, ts)
	write := func(w io.Writer) error { _, err := io.WriteString(w, "overwritten\n"); return err }
	ops := map[string]func(path string) error{
		"WriteFile": func(p string) error { return WriteFile(p, write) },
		"Create": func(p string) error {
			f, err := Create(p)
			if err == nil {
				f.Close()
			}
			return err
		},
		"OpenFile": func(p string) error {
			f, err := OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		},
	}
	for name, op := range ops {
		for path, want := range ts {
			err := op(path)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) || !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s(%s): %v, want an error naming it with %q", name, path, err, want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("%s(%s): error of more than one line: %q", name, path, err)
			}
		}
	}
	for path, mode := range modes(t, ts) {
		if mode != before[path] {
			t.Errorf("%s: mode %v became %v", path, before[path], mode)
		}
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "precious\n" {
		t.Errorf("the file behind the link holds %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(out, "created-through-a-link")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dangling link's target was created: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			t.Errorf("left a temporary file %s", e.Name())
		}
	}
}

// TestWriteFileReplacesAtomically: a regular file is replaced, a new one created; an
// error from the writer leaves the old content and no temporary file.
func TestWriteFileReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, content := range []string{"one", "two"} {
		if err := WriteFile(path, func(w io.Writer) error { _, err := io.WriteString(w, content); return err }); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("holds %q, want %q", b, content)
		}
	}
	boom := errors.New("boom")
	err := WriteFile(path, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Errorf("a failed write: %v, want boom naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "two" {
		t.Errorf("a failed write left %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("folder holds %d entries, want 1", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), func(io.Writer) error { return nil }); err == nil || !strings.Contains(err.Error(), "missing/f: no such file") {
		t.Errorf("a missing folder: %v", err)
	}
}

// TestWithin: an output path is within a folder when it lies in it or below, also
// through a link to the folder or to one of its subfolders, and when the folders to
// be created do not exist yet.
func TestWithin(t *testing.T) {
	base := t.TempDir()
	run := filepath.Join(base, "run")
	if err := os.MkdirAll(filepath.Join(run, "step-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(run, filepath.Join(base, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(run, "step-1"), filepath.Join(base, "ck")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		run:                                      true,
		filepath.Join(run, "LATEST"):             true,
		filepath.Join(run, "step-1", "m"):        true,
		filepath.Join(run, "new", "deeper", "m"): true,
		filepath.Join(base, "alias", "m"):        true,
		filepath.Join(base, "ck", "m"):           true,
		filepath.Join(run, "..", "m"):            false,
		filepath.Join(base, "m"):                 false,
		filepath.Join(base, "runner", "m"):       false,
		base:                                     false,
	} {
		if got := Within(path, run); got != want {
			t.Errorf("Within(%s, %s) = %v, want %v", path, run, got, want)
		}
	}
}
