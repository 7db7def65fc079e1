package train

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestTrainPrefixedEvalMetrics: an Eval metric named with TrainPrefix ("train_loss", an
// estimate on the training data) is logged and printed as it is, next to "val_loss",
// and a resumed run's last evaluation has it too.
func TestTrainPrefixedEvalMetrics(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	l := newLoop(t, 20, dir)
	l.EvalEvery, l.Out = 10, &out
	eval := l.Eval
	l.Eval = func(ctx context.Context) (Metrics, error) {
		m, err := eval(ctx)
		if err == nil {
			m[TrainPrefix+MetricLoss] = 2 * m[MetricLoss]
		}
		return m, err
	}
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range readMetrics(t, dir) {
		if _, bad := r.Metrics["val_train_loss"]; bad {
			t.Errorf("step %d: val_train_loss recorded: %v", r.Step, r.Metrics)
		}
		if r.Metrics["train_loss"] != 2*r.Metrics["val_loss"] || r.Metrics["val_loss"] == 0 {
			t.Errorf("step %d: train_loss %v, val_loss %v; want both, train_loss twice val_loss", r.Step, r.Metrics["train_loss"], r.Metrics["val_loss"])
		}
	}
	if !strings.Contains(out.String(), "  train_loss ") || !strings.Contains(out.String(), "  val_loss ") {
		t.Errorf("printed lines lack train_loss and val_loss:\n%s", out.String())
	}
	r := newLoop(t, 20, "")
	if err := r.Resume(dir); err != nil {
		t.Fatal(err)
	}
	if m := r.lastEval; m["train_loss"] == 0 || m["loss"] == 0 {
		t.Errorf("resumed last evaluation %v, want loss and train_loss", m)
	}
}
