package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeSaysWhereItStarts: a resumed run's header says which run it resumes and
// at which step, and its last line counts the steps it ran, not the run's total.
func TestResumeSaysWhereItStarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runCLI(t, append([]string{"train", "-steps", "6", "-out", dir}, tiny...)...)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "-> "+dir+"\n") || !strings.Contains(stderr, "done: 6 steps in ") || strings.Contains(stderr, "resuming") {
		t.Errorf("a new run's output:\n%s", stderr)
	}
	code, _, stderr = runCLI(t, "train", "-steps", "10", "-resume", dir)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var header, done string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "locus train: "):
			header = l
		case strings.HasPrefix(l, "done: "):
			done = l
		}
	}
	if want := "locus train: resuming " + dir + " at step 6 (to step 10): "; !strings.HasPrefix(header, want) {
		t.Errorf("header %q, want it to start %q", header, want)
	}
	if want := "done: 4 steps (steps 7-10) in "; !strings.HasPrefix(done, want) {
		t.Errorf("last line %q, want it to start %q", done, want)
	}
}
