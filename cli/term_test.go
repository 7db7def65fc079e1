package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/train"
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

// oneLine fails the test unless the command exited with code and printed exactly one
// line on stderr containing every want.
func oneLine(t *testing.T, what string, code int, stderr string, wantCode int, want ...string) {
	t.Helper()
	if code != wantCode || strings.Count(stderr, "\n") != 1 {
		t.Errorf("%s: exit %d, stderr %q; want exit %d and one line", what, code, stderr, wantCode)
		return
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: %q lacks %q", what, stderr, w)
		}
	}
}

// TestInspectRefusesIgnoredFlags: a flag of inspect that the chosen mode would ignore
// is an error naming it, before the checkpoint is read.
func TestInspectRefusesIgnoredFlags(t *testing.T) {
	ck := filepath.Join(t.TempDir(), "no-such-run")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-input", "1 2 3"}, "-input goes with -attention"},
		{[]string{"-example", "3"}, "-example goes with -attention"},
		{[]string{"-kernels", "-input", "1 2 3", "-out", "d"}, "-input goes with -attention"},
		{[]string{"-out", "d"}, "-out goes with -attention or -kernels"},
		{[]string{"-bandwidths", "-out", "d"}, "-out goes with -attention or -kernels"},
		{[]string{"-kernels"}, "missing -out DIR"},
		{[]string{"-kernels", "-out", "d", "-plot", "loss.png"}, "-plot goes with the checkpoint's listing"},
		{[]string{"-attention", "-input", "1", "-example", "1", "-out", "d"}, "give -input or -example, not both"},
	} {
		code, _, stderr := runCLI(t, append([]string{"inspect", "-ckpt", ck}, tc.args...)...)
		oneLine(t, strings.Join(tc.args, " "), code, stderr, 2, "locus inspect: "+tc.want)
	}
}

// TestThreadsBoundedEverywhere: -threads is checked the same way by every command and
// in a run file or checkpoint: a negative count, one past what the runtime accepts and
// one the system cannot start are one line naming the value, exit 2, before any work.
func TestThreadsBoundedEverywhere(t *testing.T) {
	limit := threadLimit()
	for _, v := range []string{"-1", strconv.Itoa(limit + 1), "100000", "2147483648", "9223372036854775807", "lots"} {
		for _, cmd := range [][]string{{"train", "-steps", "1"}, {"bench", "-workload", "attn", "-steps", "1"}, {"bench", "-workload", "e2e"}} {
			code, _, stderr := runCLI(t, append(cmd, "-threads", v)...)
			oneLine(t, strings.Join(cmd, " ")+" -threads "+v, code, stderr, 2, "-threads", v)
		}
	}
	// A run file and a checkpoint holding a bad count.
	base := t.TempDir()
	run := filepath.Join(base, "run")
	mustTrain(t, append([]string{"-steps", "2", "-out", run, "-threads", "1"}, tiny...)...)
	raw, err := os.ReadFile(filepath.Join(run, runConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(base, "bad.json")
	if err := os.WriteFile(bad, bytes.Replace(raw, []byte(`"threads": 1`), []byte(`"threads": 2147483648`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "train", "-config", bad, "-out", filepath.Join(base, "b"))
	oneLine(t, "run file threads 2147483648", code, stderr, 1, "bad.json", "threads", "2147483648 is not in 0..")
	meta := filepath.Join(run, "step-000002", train.MetaFile)
	rawMeta, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, bytes.Replace(rawMeta, []byte(`"threads": 1,`), []byte(`"threads": 100000,`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "train", "-steps", "4", "-resume", run)
	oneLine(t, "checkpoint threads 100000", code, stderr, 1, "threads", "100000 is not in 0..")
}

// positionSpecs returns, for every form of the kernel spec language whose example has
// position factors, that example and the form alone when it parses alone.
func positionSpecs(t *testing.T) []string {
	t.Helper()
	var specs []string
	for _, f := range layers.KernelForms() {
		k, err := layers.ParseKernel(f.Example)
		if err != nil || !layers.HasPositions(k) {
			continue
		}
		specs = append(specs, f.Example)
		if _, err := layers.ParseKernel(f.Name); err == nil {
			specs = append(specs, f.Name)
		}
	}
	if !slices.Contains(specs, "causal") || len(specs) < 4 {
		t.Fatalf("position forms found: %q; want causal, window, distance, relbias, …", specs)
	}
	return specs
}

// TestMethodsRefusePositionKernels: nw and meanshift refuse every position form of the
// spec language with one line naming the kernel; a content kernel still runs.
func TestMethodsRefusePositionKernels(t *testing.T) {
	dir := t.TempDir()
	pts := filepath.Join(dir, "points.csv")
	if err := os.WriteFile(pts, []byte("x,y\n0,0\n0.1,0.1\n0.2,0.3\n5,5\n5.1,5.2\n5.3,5.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, spec := range positionSpecs(t) {
		for _, cmd := range []string{"nw", "meanshift"} {
			code, stdout, stderr := runCLI(t, cmd, "-in", pts, "-kernel", spec)
			oneLine(t, cmd+" -kernel "+spec, code, stderr, 2, "locus "+cmd+": -kernel ", "has position factors")
			if stdout != "" {
				t.Errorf("%s -kernel %s printed %q", cmd, spec, stdout)
			}
		}
	}
	if code, _, stderr := runCLI(t, "nw", "-in", pts, "-kernel", "epanechnikov", "-bandwidth", "1"); code != 0 {
		t.Errorf("nw with a content kernel: exit %d, %q", code, stderr)
	}
}

// TestIgnoredModelFlagsAreRefused: a model or data flag that the chosen family's
// configuration does not hold is refused with one line, not silently ignored. The rule
// reads the configuration back with the family's ToFlags, so it holds for every family.
func TestIgnoredModelFlagsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "-model", "dae", "-heads", "8"}, "-heads 8 is not used by -model dae"},
		{[]string{"train", "-model", "dae", "-positions", "rotary"}, "-positions rotary is not used by -model dae"},
		{[]string{"train", "-task", "reverse", "-noise", "mask"}, "-noise mask is not used by -model transformer"},
		{[]string{"train", "-task", "reverse", "-sigma", "0.5"}, "-sigma 0.5 is not used by -model transformer"},
		{[]string{"train", "-task", "reverse", "-maxbytes", "100"}, "-maxbytes 100 is not used by -model transformer"},
		{[]string{"train", "-task", "reverse", "-mnist", "/nowhere"}, "-mnist /nowhere is not used by -model transformer"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		oneLine(t, strings.Join(tc.args, " "), code, stderr, 2, tc.want)
	}
}
