// Command train_reverse trains a Transformer encoder on the reverse task and saves a
// checkpoint: the whole path from data to a saved model in one screen.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

func main() {
	task, err := datasets.TaskByName("reverse", datasets.TaskConfig{SeqLen: 16})
	check(err)
	ps, err := autodiff.NewParams(autodiff.Float32, 0)
	check(err)
	cfg := transformer.DefaultConfig(transformer.ArchEncoder, task.Vocab(), task.SeqLen())
	cfg.Kernel = layers.MustParseKernelSpec("gaussian * window(8)") // any kernel spec; "exponential" is standard attention
	model, err := transformer.New(cfg, ps)
	check(err)
	run := autodiff.NewModel(ps, model.Builder(), 1)
	opt, err := optim.NewAdam(optim.All(ps.List()), optim.DefaultAdamConfig())
	check(err)
	stream, err := datasets.NewTaskStream(task, datasets.Aligned, 64, 1)
	check(err)
	loop := &train.Loop{
		Model: run, Optimizer: opt, Data: &transformer.StreamData{Stream: stream},
		Eval:  transformer.TaskEval(run, task, datasets.Aligned, 500, 2),
		Steps: 500, EvalEvery: 100, Dir: "runs/example-reverse",
		ModelConfig: cfg, DataConfig: map[string]any{"task": "reverse", "task_config": datasets.TaskConfig{SeqLen: 16}, "layout": "aligned", "batch": 64},
		Out: os.Stderr,
	}
	sum, err := loop.Run(context.Background())
	check(err)
	fmt.Printf("sequence accuracy %.3f, checkpoint %s\n", sum.Eval[transformer.MetricSeqAcc], sum.Checkpoint)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
