package dae_test

import (
	"fmt"

	"github.com/locusml/locus/models/dae"
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
