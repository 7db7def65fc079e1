package transformer

import (
	"context"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

// trainSmall builds a small float32 model (d=32, d_ff=64, the given layers) for a toy
// task and trains it with Adam 3e-3 for steps batches of 64 from data (nil: the task's
// aligned stream). It returns the model, its runner and the last training loss.
func trainSmall(t *testing.T, arch Arch, task datasets.Task, vocab, layers, steps int, data train.Data) (*Model, *autodiff.Model, float64) {
	t.Helper()
	ps, _ := autodiff.NewParams(autodiff.Float32, 0)
	cfg := DefaultConfig(arch, vocab, task.SeqLen())
	cfg.Dim, cfg.Hidden, cfg.Layers = 32, 64, layers
	m, err := New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	am := autodiff.NewModel(ps, m.Builder(), 1)
	acfg := optim.DefaultAdamConfig()
	acfg.LR = 3e-3
	opt, err := optim.NewAdam(optim.All(ps.List()), acfg)
	if err != nil {
		t.Fatal(err)
	}
	if data == nil {
		stream, err := datasets.NewTaskStream(task, datasets.Aligned, 64, 1)
		if err != nil {
			t.Fatal(err)
		}
		data = &StreamData{Stream: stream}
	}
	var loss float64
	for range steps {
		b, err := data.Next()
		if err != nil {
			t.Fatal(err)
		}
		ps.ZeroGrad()
		res, err := am.ForwardBackward(b.Inputs)
		if err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		loss = res.Loss
	}
	return m, am, loss
}

// TestReverseLearns trains a small encoder on the reverse task (T=8) and requires
// whole-sequence accuracy of at least 90% on 500 fresh sequences.
func TestReverseLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	task, err := datasets.TaskByName("reverse", datasets.TaskConfig{SeqLen: 8})
	if err != nil {
		t.Fatal(err)
	}
	_, am, loss := trainSmall(t, ArchEncoder, task, task.Vocab(), 2, 600, nil)
	met, err := TaskMetrics(context.Background(), am, task, datasets.Aligned, 500, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("final train loss %.4f, eval %v", loss, met)
	if met[MetricSeqAcc] < 0.9 {
		t.Fatalf("sequence accuracy %.3f < 0.9 after 600 steps", met[MetricSeqAcc])
	}
}
