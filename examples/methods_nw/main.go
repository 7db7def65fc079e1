// Command methods_nw compares Nadaraya–Watson regression (the local mean of
// y) with local linear regression (the localized linear model) on a noisy
// sine, for each kernel in package layers.
//
//	go run ./examples/methods_nw -bandwidth 0.3
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/methods"
)

func main() {
	bandwidth := flag.Float64("bandwidth", 0.3, "kernel bandwidth")
	n := flag.Int("n", 200, "number of training points")
	flag.Parse()

	rng := rand.New(rand.NewPCG(3, 4))
	f := func(x float64) float64 { return math.Sin(2 * x) }
	var x, y [][]float64
	for i := 0; i < *n; i++ {
		xi := 6 * rng.Float64()
		x = append(x, []float64{xi})
		y = append(y, []float64{f(xi) + 0.2*rng.NormFloat64()})
	}
	var queries [][]float64
	for i := 0; i <= 60; i++ {
		queries = append(queries, []float64{6 * float64(i) / 60})
	}

	fmt.Printf("%-13s %12s %12s\n", "kernel", "NW RMSE", "LL RMSE")
	for _, kern := range []layers.Kernel{layers.Gaussian{}, layers.Laplacian{}, layers.Cauchy{}, layers.Epanechnikov{}} {
		name := kern.Name()
		nw, err := methods.NadarayaWatson(x, y, queries, methods.LocalMeanOptions{Kernel: kern, Bandwidth: *bandwidth})
		if err != nil {
			log.Fatal(err)
		}
		ll, err := methods.LocalLinear(x, y, queries, methods.LocalLinearOptions{Kernel: kern, Bandwidth: *bandwidth, Ridge: 1e-6})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-13s %12.4f %12.4f\n", name, rmse(nw, queries, f), rmse(ll, queries, f))
	}
}

func rmse(pred, queries [][]float64, f func(float64) float64) float64 {
	var s float64
	for i, q := range queries {
		d := pred[i][0] - f(q[0])
		s += d * d
	}
	return math.Sqrt(s / float64(len(queries)))
}
