package transformer

import (
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/optim"
)

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
	ps, _ := autodiff.NewParams(autodiff.Float32, 0)
	cfg := DefaultConfig("encoder", task.Vocab(), task.SeqLen())
	cfg.Dim, cfg.Hidden = 32, 64
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
	stream, err := datasets.NewTaskStream(task, datasets.Aligned, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	var loss float64
	for step := 0; step < 600; step++ {
		ps.ZeroGrad()
		res, err := am.ForwardBackward(TaskInputs(stream.Next()))
		if err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		loss = res.Loss
	}
	met, err := TaskMetrics(am, task, datasets.Aligned, 500, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("final train loss %.4f, eval %v", loss, met)
	if met[MetricSeqAcc] < 0.9 {
		t.Fatalf("sequence accuracy %.3f < 0.9 after 600 steps", met[MetricSeqAcc])
	}
}
