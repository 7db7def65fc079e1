package transformer

import (
	"context"
	"errors"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
)

// TestEvaluationHonoursCancellation: a cancelled context stops the metrics and the
// generator before their next batch or token.
func TestEvaluationHonoursCancellation(t *testing.T) {
	task, err := datasets.TaskByName("reverse", datasets.TaskConfig{SeqLen: 6})
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	m, err := New(DefaultConfig(ArchLM, task.Vocab(), 16), ps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := TaskMetrics(ctx, autodiff.NewModel(ps, m.Builder(), 0), task, datasets.Causal, 1e9, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("TaskMetrics: %v, want context.Canceled", err)
	}
	gen, err := NewGenerator(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.GenerateContext(ctx, nil, []int{1}, 1e6, Sampling{}, -1, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("GenerateContext: %v, want context.Canceled", err)
	}
}
