package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locusml/locus/train"
)

// TestSweepKilledStopsItsCells: a sweep killed outright (SIGKILL: nothing of it runs
// to pass an interrupt on) leaves no cell training unseen: each gets SIGINT as its
// parent dies, and stops at a checkpoint.
func TestSweepKilledStopsItsCells(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sweep")
	args := append(sweepArgs(out, "-grid", "lr=1e-3,3e-3", "-parallel", "2"), "-steps", "1000000", "-eval-every", "25")
	cmd, log := helper(t, "run", args...)
	cells := []string{"lr=1e-3,seed=0", "lr=3e-3,seed=0"}
	pids := map[string]int{}
	t.Cleanup(func() { // should the test fail, end the cells it started
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for _, c := range cells {
		for {
			b, _ := os.ReadFile(filepath.Join(out, c, train.LockFile))
			_, err := os.Stat(filepath.Join(out, c, train.LatestFile))
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && err == nil {
				pids[c] = pid
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
	cmd.Process.Kill()
	cmd.Wait()
	for _, c := range cells {
		dir := filepath.Join(out, c)
		var release func()
		var err error
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if release, err = train.LockDir(dir); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("%s still trains 20 s after its sweep was killed: %v", c, err)
		}
		release()
		delete(pids, c)
		cellLog, _ := os.ReadFile(filepath.Join(out, sweepLogDir, c+".log"))
		if !strings.Contains(string(cellLog), "interrupted after step") {
			t.Errorf("%s did not stop at a checkpoint:\n%s", c, cellLog)
		}
	}
}
