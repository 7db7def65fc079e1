//go:build unix

package train

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunDirectoryLock: of two Loops started in one Dir, the second is refused while the
// first runs, with the holder's pid; the lock goes with the run.
func TestRunDirectoryLock(t *testing.T) {
	dir := t.TempDir()
	a := newLoop(t, 20, dir)
	b := newLoop(t, 20, dir)
	var errB error
	a.Hooks = []Hook{{Every: 1, Func: func(context.Context, Progress) error {
		if a.Step() == 1 {
			_, errB = b.Run(context.Background())
		}
		return nil
	}}}
	if _, err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "run directory " + dir + " in use by pid " + strconv.Itoa(os.Getpid())
	if !errors.Is(errB, ErrRunInUse) || !strings.Contains(errB.Error(), want) {
		t.Fatalf("second Loop in the same Dir: %v; want %q", errB, want)
	}
	if _, err := os.Stat(filepath.Join(dir, LockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind after the run: %v", LockFile, err)
	}
	if len(readMetrics(t, dir)) == 0 || latest(t, dir) != stepDirName(20) {
		t.Errorf("the first run's directory is not intact")
	}
}

// TestStaleLockIsTakenOver: a lock file left by a killed process does not block a run.
func TestStaleLockIsTakenOver(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	dead := strconv.Itoa(cmd.ProcessState.Pid()) + "\n"
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(dead), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newLoop(t, 5, dir).Run(context.Background()); err != nil {
		t.Fatalf("run with a stale lock file: %v", err)
	}
}

// TestResumeAfterAnotherRunMovedOnIsRefused: two resumes of one run read the same
// checkpoint; the one that locks second finds LATEST moved and refuses.
func TestResumeAfterAnotherRunMovedOnIsRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := newLoop(t, 10, dir).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, b := newLoop(t, 20, ""), newLoop(t, 20, "")
	if err := a.Resume(dir); err != nil {
		t.Fatal(err)
	}
	if err := b.Resume(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := b.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "moved from") {
		t.Fatalf("second resume: %v, want a refusal", err)
	}
	if latest(t, dir) != stepDirName(20) {
		t.Errorf("LATEST is %s", latest(t, dir))
	}
}
