package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRandomFeaturesCharLM trains a character LM with 64 random features for 20 steps,
// resumes it (refusing another m), evaluates and samples it (past its 16 positions: the
// recurrent state re-primed from the window), and checks the refusals of bad values,
// incompatible kernels and bandwidths, and a window wider than the sequence.
func TestRandomFeaturesCharLM(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	base := []string{"train", "-task", "charlm", "-arch", "lm", "-data", text, "-seqlen", "16", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32", "-batch", "8"}
	args := append(append([]string(nil), base...), "-random-features", "64", "-steps", "20", "-eval-every", "10", "-eval-n", "16", "-out", run)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	cfg, err := os.ReadFile(filepath.Join(run, "config.json"))
	if err != nil || !strings.Contains(string(cfg), `"random_features": 64`) {
		t.Errorf("config.json does not keep random_features 64 (%v):\n%s", err, cfg)
	}
	if code, _, stderr := runCLI(t, "train", "-resume", run, "-steps", "25", "-eval-n", "16"); code != 0 {
		t.Errorf("resume: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "train", "-resume", run, "-steps", "30", "-random-features", "128"); code == 0 || !strings.Contains(stderr, "-random-features 128 differs from the checkpoint's 64") {
		t.Errorf("resume with another m: exit %d\n%s", code, stderr)
	}
	if code, stdout, stderr := runCLI(t, "eval", "-ckpt", run, "-n", "16"); code != 0 || !strings.Contains(stdout, "bpc") {
		t.Errorf("eval: exit %d %q %s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "sample", "-ckpt", run, "-prompt", "the ", "-n", "20", "-temperature", "0"); code != 0 || !strings.HasPrefix(stdout, "the ") {
		t.Errorf("sample: exit %d %q %s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-random-features", "0"}, "-random-features must be > 0, got 0"},
		{[]string{"-random-features", "-3"}, "-random-features must be > 0, got -3"},
		{[]string{"-random-features", "8", "-kernel", "laplacian"}, "random features need the exponential or gaussian kernel, not laplacian"},
		{[]string{"-random-features", "8", "-kernel", "epanechnikov"}, "random features need the exponential or gaussian kernel, not epanechnikov"},
		{[]string{"-random-features", "8", "-kernel", "mixture(exponential, gaussian)"}, "random features need the exponential or gaussian kernel, not mixture(exponential, gaussian)"},
		{[]string{"-kernel", "exponential * window(17)"}, "window(17) is wider than the sequence (16 positions)"},
		{[]string{"-random-features", "8", "-kernel", "exponential * window(4)"}, "random features take no position kernel but causal"},
		{[]string{"-random-features", "8", "-bandwidth", "query"}, "a per-query or kNN bandwidth breaks the factorisation"},
		{[]string{"-random-features", "8", "-bandwidth", "knn"}, "a per-query or kNN bandwidth breaks the factorisation"},
	} {
		args := append(append(append([]string(nil), base...), c.args...), "-steps", "1", "-out", filepath.Join(dir, "bad"))
		code, _, stderr := runCLI(t, args...)
		if code == 0 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, stderr, c.want)
		}
	}
}
