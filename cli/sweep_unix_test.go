//go:build unix

package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locusml/locus/train"
)

// TestSweepCtrlC: SIGINT (or SIGHUP) to a sweep stops its running cells at a checkpoint (each gets
// one interrupt: they run in process groups of their own), and the sweep exits 130
// saying how to resume; no cell is left running or marked done.
func TestSweepCtrlC(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} { // Ctrl-C, a closed terminal
		t.Run(sig.String(), func(t *testing.T) { sweepStopsOn(t, sig) })
	}
}

func sweepStopsOn(t *testing.T, sig syscall.Signal) {
	out := filepath.Join(t.TempDir(), "sweep")
	args := append(sweepArgs(out, "-grid", "lr=1e-3,3e-3", "-parallel", "2"), "-steps", "1000000", "-eval-every", "25")
	cmd, log := helper(t, "run", args...)
	cells := []string{"lr=1e-3,seed=0", "lr=3e-3,seed=0"}
	deadline := time.Now().Add(30 * time.Second)
	for _, c := range cells {
		for {
			if _, err := os.Stat(filepath.Join(out, c, train.LatestFile)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no checkpoint in %s after 30 s:\n%s", c, log)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the sweep did not stop within 20 s of SIGINT:\n%s", log)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 || !strings.Contains(log.String(), "locus sweep: interrupted: 2 running cells stopped at a checkpoint; run the same command again to resume") {
		t.Fatalf("sweep after SIGINT: %v\n%s", err, log)
	}
	for _, c := range cells {
		dir := filepath.Join(out, c)
		release, err := train.LockDir(dir) // the cell's train has ended
		if err != nil {
			t.Errorf("%s: %v", c, err)
		} else {
			release()
		}
		if st := readCellState(dir); st.Trained || st.Done {
			t.Errorf("%s is marked %+v", c, st)
		}
		cellLog, _ := os.ReadFile(filepath.Join(out, sweepLogDir, c+".log"))
		if !strings.Contains(string(cellLog), "interrupted after step") {
			t.Errorf("%s did not stop at a checkpoint:\n%s", c, cellLog)
		}
	}
}
