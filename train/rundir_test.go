//go:build unix

package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locusml/locus/internal/regularfile"
)

// TestRunRefusesAFolderThatIsNotARun: a Dir holding files but no RunFile or LatestFile
// is refused with ErrNotRunDir and left as it was; a new Dir gets its RunFile.
func TestRunRefusesAFolderThatIsNotARun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := newLoop(t, 5, dir).Run(context.Background())
	if !errors.Is(err, ErrNotRunDir) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), MetricsFile) {
		t.Errorf("Run into a folder of other files: %v, want ErrNotRunDir naming it and %s", err, MetricsFile)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the folder holds %d entries after the refusal, want 1", len(entries))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, MetricsFile)); string(b) != "mine\n" {
		t.Errorf("%s became %q", MetricsFile, b)
	}
	fresh := filepath.Join(t.TempDir(), "run")
	if _, err := newLoop(t, 5, fresh).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(filepath.Join(fresh, RunFile)); err != nil || !info.Mode().IsRegular() {
		t.Errorf("a new run's %s: %v", RunFile, err)
	}
}

// TestLockThroughASymlinkIsRefused: a LockFile that is a link (to a file, or dangling)
// is refused, not followed: the file keeps its content, a dangling target is not created.
func TestLockThroughASymlinkIsRefused(t *testing.T) {
	for _, dangling := range []bool{false, true} {
		dir, out := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, RunFile), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		outside := filepath.Join(out, "outside.txt")
		if !dangling {
			if err := os.WriteFile(outside, []byte("precious\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(outside, filepath.Join(dir, LockFile)); err != nil {
			t.Fatal(err)
		}
		_, err := newLoop(t, 5, dir).Run(context.Background())
		if !errors.Is(err, regularfile.ErrNotRegular) || !strings.Contains(err.Error(), filepath.Join(dir, LockFile)) {
			t.Errorf("Run with a %s link: %v", LockFile, err)
		}
		b, err := os.ReadFile(outside)
		switch {
		case dangling && !errors.Is(err, os.ErrNotExist):
			t.Errorf("the dangling link's target was created: %q %v", b, err)
		case !dangling && string(b) != "precious\n":
			t.Errorf("the link's target holds %q", b)
		}
	}
}
