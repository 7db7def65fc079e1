// Command methods_nw compares Nadaraya–Watson regression (the local mean of
// y) with local linear regression (the localized linear model) on a noisy
// sine, for each kernel in package layers.
//
//	go run ./examples/methods_nw -bandwidth 0.3
//
// It prints each kernel's RMSE against the true function and exits with status
// 1 unless the best kernel's RMSE, for each method, is below half the noise's
// standard deviation: local averaging removes most of the noise.
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

// noise is the standard deviation of the noise on y.
const noise = 0.2

// result is one kernel's RMSE for each method.
type result struct {
	kernel string
	nw, ll float64
}

func main() {
	bandwidth := flag.Float64("bandwidth", 0.3, "kernel bandwidth")
	n := flag.Int("n", 200, "number of training points")
	flag.Parse()
	log.SetFlags(0)

	res, err := compare(*bandwidth, *n)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%-13s %12s %12s\n", "kernel", "NW RMSE", "LL RMSE")
	for _, r := range res {
		fmt.Printf("%-13s %12.4f %12.4f\n", r.kernel, r.nw, r.ll)
	}
	if nw, ll := best(res); nw >= noise/2 || ll >= noise/2 {
		log.Fatalf("best RMSE: NW %.4f, LL %.4f; want both below %g (half the noise)", nw, ll, noise/2)
	}
}

// compare fits both methods with each kernel at bandwidth to n noisy samples of sin 2x
// on [0, 6] and returns their RMSE against sin 2x on a grid of 61 queries.
func compare(bandwidth float64, n int) ([]result, error) {
	rng := rand.New(rand.NewPCG(3, 4))
	f := func(x float64) float64 { return math.Sin(2 * x) }
	var x, y [][]float64
	for i := 0; i < n; i++ {
		xi := 6 * rng.Float64()
		x = append(x, []float64{xi})
		y = append(y, []float64{f(xi) + noise*rng.NormFloat64()})
	}
	var queries [][]float64
	for i := 0; i <= 60; i++ {
		queries = append(queries, []float64{6 * float64(i) / 60})
	}

	var out []result
	for _, kern := range []layers.Kernel{layers.Gaussian{}, layers.Laplacian{}, layers.Cauchy{}, layers.Epanechnikov{}} {
		nw, err := methods.NadarayaWatson(x, y, queries, methods.LocalMeanOptions{Kernel: kern, Bandwidth: bandwidth})
		if err != nil {
			return nil, err
		}
		ll, err := methods.LocalLinear(x, y, queries, methods.LocalLinearOptions{Kernel: kern, Bandwidth: bandwidth, Ridge: 1e-6})
		if err != nil {
			return nil, err
		}
		out = append(out, result{kern.Name(), rmse(nw, queries, f), rmse(ll, queries, f)})
	}
	return out, nil
}

// best returns the lowest RMSE of each method over the kernels.
func best(res []result) (nw, ll float64) {
	nw, ll = math.Inf(1), math.Inf(1)
	for _, r := range res {
		nw, ll = min(nw, r.nw), min(ll, r.ll)
	}
	return nw, ll
}

func rmse(pred, queries [][]float64, f func(float64) float64) float64 {
	var s float64
	for i, q := range queries {
		d := pred[i][0] - f(q[0])
		s += d * d
	}
	return math.Sqrt(s / float64(len(queries)))
}
