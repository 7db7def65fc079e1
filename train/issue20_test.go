package train

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProgressBarCountsOnce: a frame of the bar shows the step count once, so no frame
// shows two counts one step apart.
func TestProgressBarCountsOnce(t *testing.T) {
	var out bytes.Buffer
	l := newLoop(t, 30, t.TempDir())
	l.Out, l.forceBar, l.EvalEvery = &out, true, 10
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	frames := 0
	for _, frame := range strings.Split(out.String(), "\r") {
		if n := strings.Count(frame, "/30"); n > 1 {
			t.Errorf("frame shows %d counts: %q", n, frame)
		} else if n == 1 {
			frames++
		}
	}
	if frames == 0 {
		t.Fatalf("no bar frames in:\n%s", out.String())
	}
}

// TestThroughputExcludesEvaluation: with an evaluation that takes 50ms, the training
// time implied by the summary's throughput is the run's time minus the evaluations'.
func TestThroughputExcludesEvaluation(t *testing.T) {
	l := newLoop(t, 20, "")
	eval := l.Eval
	evals := 0
	l.EvalEvery = 5
	l.Eval = func(ctx context.Context) (Metrics, error) {
		evals++
		time.Sleep(50 * time.Millisecond)
		return eval(ctx)
	}
	sum, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	train := time.Duration(float64(20*16) / sum.ItemsPerSec * float64(time.Second))
	if evalTime := time.Duration(evals) * 50 * time.Millisecond; train > sum.Elapsed-evalTime {
		t.Fatalf("training time %v from the throughput, but the run took %v of which %v evaluating", train, sum.Elapsed, evalTime)
	}
}

// TestCheckpointHoldsItsStepsMetrics: checkpoint.json holds the records of its own step
// only, and Resume takes the history from the metrics log.
func TestCheckpointHoldsItsStepsMetrics(t *testing.T) {
	dir := t.TempDir()
	l := newLoop(t, 100, dir)
	l.CheckpointEvery = 50
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, step := range []int{50, 100} {
		b, err := os.ReadFile(filepath.Join(dir, stepDirName(step), MetaFile))
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ History []Record }
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
		if len(meta.History) != 1 || meta.History[0].Step != step {
			t.Errorf("checkpoint of step %d holds %v", step, meta.History)
		}
	}
	r := newLoop(t, 100, "")
	if err := r.Resume(filepath.Join(dir, stepDirName(50))); err != nil {
		t.Fatal(err)
	}
	if h := r.History(); len(h) != 5 || h[4].Step != 50 {
		t.Fatalf("resumed history %v, want the 5 records up to step 50", h)
	}
}

// TestAccumulateDrawsBatchesPerStep: with Accumulate 3, 10 steps use 30 batches.
func TestAccumulateDrawsBatchesPerStep(t *testing.T) {
	l := newLoop(t, 10, "")
	l.Accumulate = 3
	sum, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := l.Data.(*regressionData); d.calls != 30 || sum.Step != 10 || l.Optimizer.StepCount() != 10 {
		t.Fatalf("%d batches, %d steps, %d optimizer steps; want 30, 10, 10", d.calls, sum.Step, l.Optimizer.StepCount())
	}
}
