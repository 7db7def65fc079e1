// Command train_reverse trains a Transformer encoder to reverse sequences of 16 digits and
// saves a checkpoint: the whole path from data to a saved model in one screen.
//
//	go run ./examples/train_reverse                      # 500 steps into runs/example-reverse
//	go run ./cmd/locus eval -ckpt runs/example-reverse   # the locus commands open its checkpoint
//
// It prints the sequence accuracy on fresh data and exits with status 1 when it is below
// 0.99. The run directory must not hold a run already (-out names another).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

// minSeqAcc is the sequence accuracy the example must reach.
const minSeqAcc = 0.99

func main() {
	steps := flag.Int("steps", 500, "training steps")
	dir := flag.String("out", "runs/example-reverse", "run directory for the checkpoints and metrics")
	flag.Parse()
	log.SetFlags(0)
	acc, ckpt, err := trainReverse(context.Background(), 16, *steps, *dir, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("sequence accuracy %.3f, checkpoint %s\n", acc, ckpt)
	if acc < minSeqAcc {
		log.Fatalf("sequence accuracy %.3f is below %.2f", acc, minSeqAcc)
	}
}

// trainReverse trains on sequences of seqLen digits for steps steps, saving the run in dir,
// and returns the sequence accuracy on 500 fresh sequences and the last checkpoint.
func trainReverse(ctx context.Context, seqLen, steps int, dir string, progress io.Writer) (float64, string, error) {
	dataCfg := transformer.DataConfig{Task: "reverse", TaskConfig: datasets.TaskConfig{SeqLen: seqLen},
		Layout: datasets.Aligned, Batch: 64, Seed: 1}
	data, err := dataCfg.Open()
	if err != nil {
		return 0, "", err
	}
	cfg := transformer.DefaultConfig(transformer.ArchEncoder, data.ModelVocab(transformer.ArchEncoder), data.SeqLen())
	// Reversal needs every position t to see its mirror T−1−t, anywhere in the sequence:
	// a content kernel with no position factor can, while a window narrower than the
	// sequence ("gaussian * window(8)") hides the mirror from most positions and cannot
	// get past chance. Any kernel spec works here; "exponential" is standard attention.
	cfg.Kernel = layers.MustParseKernelSpec("gaussian")
	if err := data.Check(cfg); err != nil {
		return 0, "", err
	}
	ps, err := autodiff.NewParams(autodiff.Float32, 0)
	if err != nil {
		return 0, "", err
	}
	model, err := transformer.New(cfg, ps)
	if err != nil {
		return 0, "", err
	}
	run := autodiff.NewModel(ps, model.Builder(), 1)
	opt, err := optim.NewAdam(optim.All(ps.List()), optim.DefaultAdamConfig())
	if err != nil {
		return 0, "", err
	}
	batches, err := data.Train(cfg.Arch, dataCfg.Seed+1)
	if err != nil {
		return 0, "", err
	}
	loop := &train.Loop{
		Model: run, Optimizer: opt, Data: batches,
		Eval: func(ctx context.Context) (train.Metrics, error) {
			return data.Metrics(ctx, run, cfg.Arch, 500, dataCfg.Seed+2)
		},
		Steps: steps, EvalEvery: 100, Dir: dir,
		// Family, ModelConfig and DataConfig go into every checkpoint: with them
		// `locus eval`, `inspect`, `report` and `export` rebuild the model and its data.
		Family: transformer.Family, ModelConfig: cfg, DataConfig: data.Config,
		Out: progress,
	}
	sum, err := loop.Run(ctx)
	if err != nil {
		return 0, "", err
	}
	return sum.Eval[transformer.MetricSeqAcc], sum.Checkpoint, nil
}
