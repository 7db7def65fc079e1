package dae_test

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

// The lazy DAE pulls a noisy point to the Gaussian local mean of the training set: with a
// bandwidth small next to the gaps between points, mostly towards the nearest one.
func ExampleNewLazy() {
	train := []float32{
		0, 0,
		1, 0,
		0, 1,
	}
	lazy, err := dae.NewLazy(train, 2, 0.5)
	if err != nil {
		panic(err)
	}
	noisy := []float32{0.9, 0.15}
	out := make([]float32, 2)
	if err := lazy.Denoise(out, noisy); err != nil {
		panic(err)
	}
	fmt.Printf("%.3f %.3f\n", out[0], out[1])
	// Output: 0.799 0.040
}

// Train an MLP DAE with train.Loop: NewData gives the noisy batches, Metrics the test
// MSE. The images here are 4×4 bars, one lit row or column each; for MNIST pass
// datasets.LoadMNIST's Train and Test, and dae.DefaultConfig.
func ExampleNewData() {
	bars := func(n int, seed uint64) *datasets.Images {
		rng := rand.New(rand.NewPCG(seed, 0))
		im := &datasets.Images{Pixels: make([]float32, n*16), Labels: make([]int, n), N: n, Rows: 4, Cols: 4}
		for i := range n {
			k := rng.IntN(4)
			for j := range 4 {
				p := k*4 + j // row k
				if rng.IntN(2) == 0 {
					p = j*4 + k // column k
				}
				im.Pixels[i*16+p] = 1
			}
		}
		return im
	}
	trainSet, test := bars(512, 1), bars(100, 2)

	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	m, err := dae.New(dae.Config{Kind: dae.KindMLP, In: 16, Hidden: []int{32, 8, 32}, Noise: dae.NoiseGaussian, Sigma: 0.3}, ps)
	if err != nil {
		log.Fatal(err)
	}
	data, err := dae.NewData(m, trainSet, 32, 1) // 16 steps per epoch
	if err != nil {
		log.Fatal(err)
	}
	opt, err := optim.NewAdam(optim.All(ps.List()), optim.AdamConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	if err != nil {
		log.Fatal(err)
	}
	eval := func(ctx context.Context) (train.Metrics, error) {
		return dae.Metrics(ctx, m, test.Pixels, m.Noise(), 2)
	}
	before, _ := eval(context.Background())
	loop := &train.Loop{Model: m.Net(), Optimizer: opt, Data: data, Eval: eval, Steps: 20 * data.StepsPerEpoch()}
	sum, err := loop.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d steps; noisy-input test MSE below a tenth of the untrained model's: %v\n",
		sum.Step, sum.Eval[dae.MetricMSENoisy] < before[dae.MetricMSENoisy]/10)
	// Output: 320 steps; noisy-input test MSE below a tenth of the untrained model's: true
}
