// Command nw_bandwidth learns the bandwidth of a Nadaraya–Watson regressor by gradient
// descent. The model is one local mean (THEORY.md §2): the prediction at x is the
// kernel-weighted mean of the training y's, with a Gaussian kernel whose bandwidth h is
// a parameter (layers.NewBandwidth). It is trained on the leave-one-out error, each
// training point predicted from the others (a hollow mask), so that h cannot shrink to
// zero by memorising the data. No Transformer, no layer but LocalMean.
//
//	go run ./examples/nw_bandwidth
//
// It prints the learned bandwidth and the test RMSE against the true function, beside
// that of the fixed rule-of-thumb bandwidth it started from (Silverman's), and exits with
// status 1 when the learned bandwidth does worse.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

// f is the function the regressor recovers from noisy samples.
func f(x float64) float64 { return math.Sin(2 * x) }

func main() {
	n := flag.Int("n", 200, "training points")
	steps := flag.Int("steps", 200, "gradient steps on the bandwidth")
	flag.Parse()
	log.SetFlags(0)
	r, err := fit(*n, *steps)
	if err != nil {
		log.Fatal(err)
	}
	for _, rec := range r.history {
		fmt.Printf("step %3d: h = %.4f, test RMSE %.4f\n", rec.Step, rec.Metrics["bandwidth.nw"], rec.Metrics["val_rmse"])
	}
	fmt.Printf("fixed bandwidth (Silverman) h = %.4f: test RMSE %.4f\n", r.h0, r.rmse0)
	fmt.Printf("learned bandwidth           h = %.4f: test RMSE %.4f\n", r.h, r.rmse)
	if r.rmse > r.rmse0 {
		log.Fatalf("the learned bandwidth's test RMSE %.4f is worse than the fixed one's %.4f", r.rmse, r.rmse0)
	}
}

// result is what fit found: the start and learned bandwidths with their test RMSE, and
// the Loop's records (bandwidth and test RMSE at each evaluation).
type result struct {
	h0, rmse0, h, rmse float64
	history            []train.Record
}

// fit draws n noisy samples of f on [0, 6], trains the bandwidth for steps steps from
// Silverman's rule of thumb, and measures both bandwidths on a grid of test points.
func fit(n, steps int) (result, error) {
	xs, ys, queries := samples(n)
	// Inputs [batch 1, points, 1 feature]: LocalMean takes queries, keys and values of
	// shape [N, T, d].
	x, err := autodiff.FromSlice(xs, 1, n, 1)
	if err != nil {
		return result{}, err
	}
	y, err := autodiff.FromSlice(ys, 1, n, 1)
	if err != nil {
		return result{}, err
	}
	q, err := autodiff.FromSlice(queries, 1, len(queries), 1)
	if err != nil {
		return result{}, err
	}

	ps, err := autodiff.NewParams(autodiff.Float64, 0)
	if err != nil {
		return result{}, err
	}
	h0 := 1.06 * stddev(xs) * math.Pow(float64(n), -0.2) // Silverman's rule of thumb
	bw, err := layers.NewBandwidth(ps.Scope("nw"), layers.BandwidthConfig{Mode: layers.BandwidthLayer, Init: h0})
	if err != nil {
		return result{}, err
	}
	kernel := layers.Gaussian{}
	// Training: the leave-one-out squared error at the training points.
	looLoss := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		x, y := g.Input("x"), g.Input("y")
		pred := layers.LocalMean(g, x, x, y, kernel, bw.Width(g), layers.LocalMeanOptions{Mask: autodiff.Mask{Hollow: true}})
		return autodiff.Outputs{Loss: g.Mean(g.Square(g.Sub(pred, y)))}, g.Err()
	}, 0)
	// Prediction: the local mean of all training points at the queries.
	predict := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		pred := layers.LocalMean(g, g.Input("q"), g.Input("x"), g.Input("y"), kernel, bw.Width(g), layers.LocalMeanOptions{})
		return autodiff.Outputs{Values: map[string]*autodiff.Node{"pred": pred}}, g.Err()
	}, 0)
	testRMSE := func(context.Context) (train.Metrics, error) {
		res, err := predict.Forward(map[string]*tensor.Dense{"q": q, "x": x, "y": y})
		if err != nil {
			return nil, err
		}
		var s float64
		for i, p := range res.Values["pred"].Data().([]float64) {
			s += (p - f(queries[i])) * (p - f(queries[i]))
		}
		return train.Metrics{"rmse": math.Sqrt(s / float64(len(queries)))}, nil
	}
	start, err := testRMSE(context.Background())
	if err != nil {
		return result{}, err
	}

	acfg := optim.DefaultAdamConfig()
	acfg.LR = 0.05
	opt, err := optim.NewAdam(optim.All(ps.List()), acfg)
	if err != nil {
		return result{}, err
	}
	batch := train.Batch{Inputs: map[string]*tensor.Dense{"x": x, "y": y}, Items: n}
	loop := &train.Loop{
		Model: looLoss, Optimizer: opt,
		// Every step sees the whole training set; there is no position to save.
		Data:  train.NewData(func() (train.Batch, error) { return batch, nil }, func() int { return 0 }, func(int) error { return nil }),
		Steps: steps, EvalEvery: max(1, steps/4), LogEvery: max(1, steps/4),
		Eval: testRMSE,
		// The bandwidth at every evaluation, as "bandwidth.nw" (the names locus train logs).
		Observe: train.ObserveBandwidths(bw.Bandwidths),
	}
	sum, err := loop.Run(context.Background())
	if err != nil {
		return result{}, err
	}
	return result{h0: h0, rmse0: start["rmse"], h: bw.Value(), rmse: sum.Eval["rmse"], history: loop.History()}, nil
}

// samples returns n points x on [0, 6] with y = f(x) + noise of standard deviation 0.2,
// and the test points, a grid on [0, 6].
func samples(n int) (xs, ys, queries []float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs, ys = make([]float64, n), make([]float64, n)
	for i := range xs {
		xs[i] = 6 * rng.Float64()
		ys[i] = f(xs[i]) + 0.2*rng.NormFloat64()
	}
	queries = make([]float64, 121)
	for i := range queries {
		queries[i] = 6 * float64(i) / 120
	}
	return xs, ys, queries
}

func stddev(v []float64) float64 {
	var m, s float64
	for _, x := range v {
		m += x / float64(len(v))
	}
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}
