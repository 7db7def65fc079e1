//go:build mpi

package cli

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locusml/locus/train"
)

// TestMain makes this test binary the locus command when LOCUS_TEST_AS_MAIN is set, so
// that the tests below can start it under mpirun.
func TestMain(m *testing.M) {
	if os.Getenv("LOCUS_TEST_AS_MAIN") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// mpirun returns a command running this binary as locus with args on np processes.
func mpirun(t *testing.T, np int, args ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not installed")
	}
	cmd := exec.Command(path, append([]string{"--oversubscribe", "-np", strconv.Itoa(np), os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), "LOCUS_TEST_AS_MAIN=1", "GOMAXPROCS=1",
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	return cmd
}

// rankPID returns the process id of the child of parent that is MPI rank rank.
func rankPID(parent, rank int) (int, bool) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join(d, "environ"))
		if bytes.Contains(env, []byte(fmt.Sprintf("\x00OMPI_COMM_WORLD_RANK=%d\x00", rank))) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid, true
		}
	}
	return 0, false
}

// TestMPIKillOneRank kills rank 1, then in another run rank 0 (the one that writes), of a
// two-process run with SIGKILL once a checkpoint is written: the job ends within 30 s with
// a non-zero status and a message, the last checkpoint loads, and -resume on two
// processes continues from it.
func TestMPIKillOneRank(t *testing.T) {
	for _, rank := range []int{1, 0} {
		t.Run(fmt.Sprintf("rank%d", rank), func(t *testing.T) { killRank(t, rank) })
	}
}

func killRank(t *testing.T, rank int) {
	dir := filepath.Join(t.TempDir(), "run")
	cmd := mpirun(t, 2, "train", "-task", "reverse", "-steps", "100000", "-eval-every", "20", "-eval-n", "50", "-out", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, train.LatestFile)); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before its first checkpoint: %v\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no checkpoint after 2 minutes\n%s", out.String())
		}
	}
	time.Sleep(300 * time.Millisecond) // mid-run, between checkpoints
	pid, ok := rankPID(cmd.Process.Pid, rank)
	if !ok {
		_ = cmd.Process.Kill()
		t.Fatalf("rank %d's process not found among mpirun's children", rank)
	}
	if err := exec.Command("kill", "-9", strconv.Itoa(pid)).Run(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case err := <-done:
		took := time.Since(killed)
		t.Logf("after kill -9 of rank %d the job ended in %v with %v; mpirun said:\n%s", rank, took.Round(time.Millisecond), err, out.String())
		if err == nil {
			t.Error("the job exited with status 0")
		}
		if !strings.Contains(out.String(), "signal 9") {
			t.Error("no message names the killed process")
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the job still runs 30 s after kill -9 of rank %d\n%s", rank, out.String())
	}

	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		t.Fatalf("the last checkpoint does not load: %v", err)
	}
	steps := ck.Step + 10
	res := mpirun(t, 2, "train", "-resume", dir, "-steps", strconv.Itoa(steps))
	b, err := res.CombinedOutput()
	if err != nil {
		t.Fatalf("resume on 2 processes: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), fmt.Sprintf("step %d ", steps)) {
		t.Errorf("resume from step %d did not reach step %d:\n%s", ck.Step, steps, b)
	}
	t.Logf("resumed from step %d to %d on 2 processes", ck.Step, steps)
}

// TestMPITrainEqualsOneProcess trains 30 steps of the default Transformer with the mpi
// build started without mpirun (one process) and under mpirun -np 2: the checkpoints'
// weights agree to float32 round-off (the attention key biases, whose gradient is
// round-off, apart).
func TestMPITrainEqualsOneProcess(t *testing.T) {
	base := t.TempDir()
	args := []string{"train", "-task", "reverse", "-steps", "30", "-eval-every", "0", "-eval-n", "50"}
	one := exec.Command(os.Args[0], append(args, "-out", filepath.Join(base, "one"))...)
	one.Env = append(os.Environ(), "LOCUS_TEST_AS_MAIN=1")
	if b, err := one.CombinedOutput(); err != nil {
		t.Fatalf("one process: %v\n%s", err, b)
	}
	if b, err := mpirun(t, 2, append(args, "-out", filepath.Join(base, "two"))...).CombinedOutput(); err != nil {
		t.Fatalf("mpirun -np 2: %v\n%s", err, b)
	}
	a, err := train.LoadCheckpoint(filepath.Join(base, "one"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := train.LoadCheckpoint(filepath.Join(base, "two"))
	if err != nil {
		t.Fatal(err)
	}
	var d, dk float64
	for name, x := range a.Params {
		xs, ys := x.Data().([]float32), b.Params[name].Data().([]float32)
		for i := range xs {
			e := math.Abs(float64(xs[i] - ys[i]))
			if strings.HasSuffix(name, "attn.k.bias") {
				dk = math.Max(dk, e)
			} else {
				d = math.Max(d, e)
			}
		}
	}
	valLoss := func(ck *train.Checkpoint) float64 { return ck.History[len(ck.History)-1].Metrics["val_loss"] }
	va, vb := valLoss(a), valLoss(b)
	t.Logf("after 30 steps: max abs weight difference %.3g, %.3g in the key biases; validation loss %.9g and %.9g", d, dk, va, vb)
	if d > 1e-5 || dk > 1e-4 || math.Abs(va-vb) > 1e-6*va {
		t.Errorf("1 and 2 processes differ: weights by %g (key biases %g), validation loss %v and %v", d, dk, va, vb)
	}
}
