package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The e2e workload is a whole `locus train -task charlm` run as issue 18 times it: 1500
// steps of batch 32, evaluating (1600 validation windows) and checkpointing every 250
// steps, in a temporary run directory, as a child process.
const (
	e2eSteps     = 1500
	e2eEvalEvery = 250
	e2eEvalN     = 1600
	e2eBatch     = 32
)

// e2eResult is the e2e workload's measurement: the child's wall time and where the
// training loop's part of it went (train.Summary.Time), in seconds.
type e2eResult struct {
	Workload    string  `json:"workload"`
	Steps       int     `json:"steps"`
	WallS       float64 `json:"wall_s"`  // the whole process: start, corpus, model, loop
	SetupS      float64 `json:"setup_s"` // wall minus the loop
	StepsS      float64 `json:"steps_s"`
	StepMs      float64 `json:"step_ms"` // mean
	EvalS       float64 `json:"eval_s"`
	CheckpointS float64 `json:"checkpoint_s"`
	DataS       float64 `json:"data_s"`
	OtherS      float64 `json:"other_s"`
	CPUS        float64 `json:"cpu_s"` // the child's user + system time
}

// runE2E runs the e2e workload with steps training steps.
func runE2E(steps int, asJSON bool, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "locus-e2e-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"train", "-task", "charlm", "-steps", strconv.Itoa(steps), "-batch", strconv.Itoa(e2eBatch),
		"-eval-every", strconv.Itoa(e2eEvalEvery), "-eval-n", strconv.Itoa(e2eEvalN), "-out", dir + "/run"}
	fmt.Fprintf(stderr, "running locus %s\n", strings.Join(args, " "))
	cmd := exec.Command(exe, args...)
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	t0 := time.Now()
	if _, err := cmd.Output(); err != nil {
		return fmt.Errorf("e2e: %w\n%s", err, errBuf.String())
	}
	r := e2eResult{Workload: "e2e", Steps: steps, WallS: time.Since(t0).Seconds()}
	if ps := cmd.ProcessState; ps != nil {
		r.CPUS = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	if err := parseTrainTime(errBuf.String(), &r); err != nil {
		return fmt.Errorf("e2e: %w", err)
	}
	r.SetupS = r.WallS - r.StepsS - r.EvalS - r.CheckpointS - r.DataS - r.OtherS
	r.StepMs = r.StepsS / float64(steps) * 1e3
	if asJSON {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintf(stdout, "e2e: locus train -task charlm, %d steps of batch %d, evaluation (%d windows) and checkpoint every %d: wall %.1f s (CPU %.1f s)\n",
		steps, e2eBatch, e2eEvalN, e2eEvalEvery, r.WallS, r.CPUS)
	fmt.Fprintf(stdout, "  steps %.1f s (%.1f ms/step), evaluation %.1f s, checkpoints and plot %.2f s, data %.2f s, other %.2f s, setup %.2f s\n",
		r.StepsS, r.StepMs, r.EvalS, r.CheckpointS, r.DataS, r.OtherS, r.SetupS)
	return nil
}

// parseTrainTime reads the "time: steps …" line `locus train` prints at the end.
func parseTrainTime(out string, r *e2eResult) error {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "time: "); ok {
			_, err := fmt.Sscanf(rest, "steps %fs, evaluation %fs, checkpoints and plot %fs, data %fs, other %fs",
				&r.StepsS, &r.EvalS, &r.CheckpointS, &r.DataS, &r.OtherS)
			return err
		}
	}
	return fmt.Errorf("no time line in the output of locus train:\n%s", out)
}
