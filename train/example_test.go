package train_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
	"gorgonia.org/tensor"
)

// Fit y = 2x + 1 with a one-weight model, checkpointing into a run directory, then
// resume the run for more steps.
func Example() {
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	w, _ := ps.Root().New("w", []int{1, 1}, autodiff.Zeros())
	b, _ := ps.Root().New("b", []int{1}, autodiff.Zeros())
	build := func(g *autodiff.Graph) (autodiff.Outputs, error) {
		pred := g.AddBias(g.MatMul(g.Input("x"), g.Param(w)), g.Param(b))
		return autodiff.Outputs{Loss: g.Mean(g.Square(g.Sub(pred, g.Input("y"))))}, g.Err()
	}
	model := autodiff.NewModel(ps, build, 1)
	opt, _ := optim.NewAdam(optim.All(ps.List()), optim.AdamConfig{LR: 0.05, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})

	// Shuffled mini-batches of 8 of 32 points; the iterator's position goes into checkpoints.
	it, _ := datasets.NewIterator(datasets.IteratorConfig{N: 32, BatchSize: 8, Seed: 1, Shuffle: true})
	next := func() (train.Batch, error) {
		idx, _ := it.Next()
		x, y := make([]float32, len(idx)), make([]float32, len(idx))
		for i, j := range idx {
			x[i] = float32(j)/16 - 1
			y[i] = 2*x[i] + 1
		}
		return train.Batch{Items: len(idx), Inputs: map[string]*tensor.Dense{
			"x": tensor.New(tensor.WithShape(len(idx), 1), tensor.WithBacking(x)),
			"y": tensor.New(tensor.WithShape(len(idx), 1), tensor.WithBacking(y)),
		}}, nil
	}

	dir, _ := os.MkdirTemp("", "locus-run")
	defer os.RemoveAll(dir)
	loop := &train.Loop{
		Model: model, Optimizer: opt, Data: train.NewData(next, it.State, it.Restore),
		Steps: 300, CheckpointEvery: 100, KeepLast: 2, Dir: dir,
		Out: nil, // os.Stderr for a progress bar
	}
	sum, err := loop.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("step %d: w %.2f, b %.2f\n", sum.Step, w.At(0), b.At(0))

	// Later, possibly in another process after an interruption: continue to 400 steps.
	more := &train.Loop{
		Model: model, Optimizer: opt, Data: train.NewData(next, it.State, it.Restore),
		Steps: 400, CheckpointEvery: 100, KeepLast: 2,
	}
	if err := more.Resume(dir); err != nil { // restores weights, optimizer, data position, ...
		log.Fatal(err)
	}
	if _, err := more.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
	ck, err := train.LoadCheckpoint(dir) // the latest checkpoint of the run
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("latest checkpoint: step", ck.Step)
	// Output:
	// step 300: w 2.00, b 1.00
	// latest checkpoint: step 400
}
