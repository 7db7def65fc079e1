//go:build mpi

package cli

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locusml/locus/train"
)

// mpirunIn returns a command running this binary as locus with args under mpirun, one
// process in each of dirs (rank r's working folder is dirs[r]). A job that still runs
// after 2 minutes (processes that disagree can wait for each other for ever) is ended
// with SIGTERM, which mpirun passes on to its processes.
func mpirunIn(t *testing.T, dirs []string, args ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not installed")
	}
	var argv []string
	for i, d := range dirs {
		if i > 0 {
			argv = append(argv, ":")
		}
		argv = append(argv, "-np", "1", "-wdir", d, os.Args[0])
		argv = append(argv, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, path, append([]string{"--oversubscribe"}, argv...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), "LOCUS_TEST_AS_MAIN=1", "GOMAXPROCS=1",
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	return cmd
}

// weightDiff returns the largest difference between the weights of two runs'
// checkpoints, relative to 1 + |weight|, leaving out the attention key biases, whose
// gradient is round-off (TestMPITrainEqualsOneProcess).
func weightDiff(t *testing.T, one, many string) float64 {
	t.Helper()
	a, err := train.LoadCheckpoint(one)
	if err != nil {
		t.Fatal(err)
	}
	b, err := train.LoadCheckpoint(many)
	if err != nil {
		t.Fatal(err)
	}
	if a.Step != b.Step || len(a.Params) != len(b.Params) {
		t.Fatalf("checkpoints at steps %d and %d with %d and %d tensors", a.Step, b.Step, len(a.Params), len(b.Params))
	}
	var d float64
	for name, x := range a.Params {
		if strings.HasSuffix(name, "attn.k.bias") {
			continue
		}
		y := b.Params[name]
		if y == nil {
			t.Fatalf("%s is missing from %s", name, many)
		}
		xs, ys := x.Data().([]float64), y.Data().([]float64)
		for i := range xs {
			d = math.Max(d, math.Abs(xs[i]-ys[i])/(1+math.Abs(xs[i])))
		}
	}
	return d
}

// trainOneAndMPI trains args (float64) on one process, in this test process, and under
// mpirun -np np, and returns mpirun's output and the largest relative weight difference
// of the two runs.
func trainOneAndMPI(t *testing.T, np int, args ...string) (string, float64) {
	t.Helper()
	base := t.TempDir()
	args = append([]string{"train", "-dtype", "float64", "-eval-every", "0", "-eval-n", "8"}, args...)
	one, many := filepath.Join(base, "one"), filepath.Join(base, "many")
	if code, _, stderr := runCLI(t, append(args, "-out", one)...); code != 0 {
		t.Fatalf("one process: exit %d\n%s", code, stderr)
	}
	out, err := mpirun(t, np, append(args, "-out", many)...).CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun -np %d: %v\n%s", np, err, out)
	}
	if strings.Contains(string(out), "panic") {
		t.Fatalf("mpirun -np %d printed a panic:\n%s", np, out)
	}
	if !strings.Contains(string(out), "processes, GOMAXPROCS") {
		t.Fatalf("mpirun -np %d did not train on %d processes:\n%s", np, np, out)
	}
	t.Logf("mpirun -np %d:\n%s", np, out)
	return string(out), weightDiff(t, one, many)
}

// TestMPIBatchSmallerThanProcesses trains every family (the Transformer on a toy task as
// encoder and encdec, the character LM, the DAE and the localized DAE) with -batch 2 on
// 3 processes: the process whose part of each batch is empty waits at the all-reduce,
// and the run computes what one process does.
func TestMPIBatchSmallerThanProcesses(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(corpus, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	writeMNIST(t, dir, 16, 4)
	small := []string{"-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32"}
	for name, args := range map[string][]string{
		"reverse": append([]string{"-task", "reverse"}, small...),
		"encdec":  append([]string{"-task", "reverse", "-arch", "encdec"}, small...),
		"charlm":  append([]string{"-task", "charlm", "-data", corpus, "-seqlen", "16"}, small...),
		"dae":     {"-model", "dae", "-mnist", dir},
		"ldae":    {"-model", "ldae", "-mnist", dir},
	} {
		t.Run(name, func(t *testing.T) {
			out, d := trainOneAndMPI(t, 3, append(args, "-batch", "2", "-steps", "3")...)
			if !strings.Contains(out, "1 of them idle at each step") {
				t.Error("the header does not say that a process is idle")
			}
			t.Logf("-batch 2 on 3 processes: largest relative weight difference from one process %.3g", d)
			if d > 1e-9 {
				t.Errorf("-batch 2 on 3 processes differs from one process by %g", d)
			}
		})
	}
}

// TestMPILocalizedDAEPositionKernelEqualsOneProcess trains a localized DAE whose kernel
// has a position factor (window), whose images are positions in their batch, on 2
// processes: the weights equal one process's to float64 round-off (they differed by
// 0.0165 when the batch was split by rows).
func TestMPILocalizedDAEPositionKernelEqualsOneProcess(t *testing.T) {
	dir := t.TempDir()
	writeMNIST(t, dir, 16, 4)
	out, d := trainOneAndMPI(t, 2, "-model", "ldae", "-kernel", "gaussian * window(2)", "-mnist", dir, "-batch", "8", "-steps", "3")
	if !strings.Contains(out, "rank 0 computes each batch of 8 whole") {
		t.Error("the header does not say that rank 0 computes the batches whole")
	}
	t.Logf("ldae with a window kernel on 2 processes: largest relative weight difference from one process %.3g", d)
	if d > 1e-12 {
		t.Errorf("ldae with a window kernel on 2 processes differs from one process by %g", d)
	}
}

// TestMPIRanksReadOtherData starts 2 processes with the same flags in 2 working folders
// whose relative data paths name different data: a text of the same length, a text one
// byte longer, other MNIST images, a run file with other settings. Every case stops
// before training with one message that names rank 1 and what differs, and a non-zero
// status; no MPI error and no panic.
func TestMPIRanksReadOtherData(t *testing.T) {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 40)
	small := []string{"-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32", "-batch", "4", "-steps", "3", "-eval-every", "0", "-eval-n", "8"}
	charlm := append([]string{"train", "-task", "charlm", "-data", "corpus.txt", "-seqlen", "16"}, small...)
	runFile := func(steps string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if code, _, stderr := runCLI(t, append([]string{"train", "-task", "reverse", "-out", filepath.Join(dir, "run")}, small...)...); code != 0 {
				t.Fatalf("write a run file: exit %d\n%s", code, stderr)
			}
			b, err := os.ReadFile(filepath.Join(dir, "run", "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.Replace(string(b), `"steps": 3`, `"steps": `+steps, 1))
			if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeText := func(s string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "corpus.txt"), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mnistIn := func(n int) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "mnist"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeMNIST(t, filepath.Join(dir, "mnist"), n, 4)
		}
	}
	for _, tc := range []struct {
		name       string
		args       []string
		rank0      func(t *testing.T, dir string)
		rank1      func(t *testing.T, dir string)
		wantFields []string
	}{
		{"other text", charlm, writeText(text), writeText(strings.ToUpper(text[:1]) + text[1:]), []string{"data_config.corpus_sha256"}},
		{"one byte longer", charlm, writeText(text), writeText(text + "!"), []string{"data_config.corpus_sha256", "data_config.vocab"}},
		{"other images", []string{"train", "-model", "dae", "-mnist", "mnist", "-batch", "4", "-steps", "3", "-eval-every", "0", "-eval-n", "8"},
			mnistIn(16), mnistIn(17),
			[]string{"data digest"}},
		{"other run file", []string{"train", "-config", "run.json", "-out", "out"}, runFile("3"), runFile("5"), []string{"train.steps"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dirs := []string{filepath.Join(base, "rank0"), filepath.Join(base, "rank1")}
			for i, prep := range []func(*testing.T, string){tc.rank0, tc.rank1} {
				if err := os.MkdirAll(dirs[i], 0o755); err != nil {
					t.Fatal(err)
				}
				prep(t, dirs[i])
			}
			b, err := mpirunIn(t, dirs, tc.args...).CombinedOutput()
			out := string(b)
			t.Logf("mpirun:\n%s", out)
			if err == nil {
				t.Fatal("the job exited with status 0")
			}
			for _, bad := range []string{"MPI_ERR", "panic", " parameters, "} {
				if strings.Contains(out, bad) {
					t.Errorf("the output holds %q", bad)
				}
			}
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "do not train the same run") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 {
				t.Fatalf("%d lines say the processes differ, want 1", len(lines))
			}
			if !strings.Contains(lines[0], "rank 1 differs from rank 0 in ") {
				t.Errorf("the message does not name rank 1: %s", lines[0])
			}
			for _, f := range tc.wantFields {
				if !strings.Contains(lines[0], f) {
					t.Errorf("the message does not name %s: %s", f, lines[0])
				}
			}
		})
	}
}
