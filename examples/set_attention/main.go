// Command set_attention classifies sets of 2-D points as samples of a circle or of a
// line segment with a kernel-attention model built from layers directly, no Transformer:
// each point is embedded, attends to the other points of its set through a Gaussian
// kernel with a learned bandwidth per head (layers.KernelAttention: the local mean of
// the values around each query, THEORY.md §5), and the set is the mean of its points,
// so the answer does not depend on the order of the points.
//
// A point alone says nothing about the shape (the sets have random centres, sizes and
// orientations); attention lets each point's features depend on the points near it.
//
//	go run ./examples/set_attention
//
// It prints the validation accuracy and the learned bandwidths, and exits with status 1
// when the accuracy is below 0.95.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

const (
	points    = 16   // points per set
	dim       = 32   // width of a point's embedding
	minAcc    = 0.95 // the accuracy the example must reach
	metricAcc = "accuracy"
)

func main() {
	steps := flag.Int("steps", 800, "training steps of 64 sets")
	flag.Parse()
	log.SetFlags(0)
	acc, bw, err := fit(*steps, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("validation accuracy %.3f on 512 sets; learned bandwidths %.3f\n", acc, bw)
	if acc < minAcc {
		log.Fatalf("accuracy %.3f is below %.2f", acc, minAcc)
	}
}

// model is the set classifier's layers.
type model struct {
	embed *layers.Linear          // a point (x, y) to its embedding
	norm  *layers.LayerNorm       // pre-attention normalisation
	attn  *layers.KernelAttention // every point attends to the points of its set
	out   *layers.FeedForward     // on the pooled set
	head  *layers.Linear          // to the logits of circle and line
}

func newModel(ps *autodiff.Params) (*model, error) {
	var m model
	var err error
	if m.embed, err = layers.NewLinear(ps.Scope("embed"), layers.LinearConfig{In: 2, Out: dim}); err != nil {
		return nil, err
	}
	if m.norm, err = layers.NewLayerNorm(ps.Scope("norm"), layers.NormConfig{Dim: dim}); err != nil {
		return nil, err
	}
	m.attn, err = layers.NewKernelAttention(ps.Scope("attn"), layers.AttentionConfig{
		Dim: dim, Heads: 4, Kernel: layers.Gaussian{},
		Bandwidth: layers.BandwidthConfig{Mode: layers.BandwidthHead},
	})
	if err != nil {
		return nil, err
	}
	if m.out, err = layers.NewFeedForward(ps.Scope("out"), layers.FeedForwardConfig{Dim: dim}); err != nil {
		return nil, err
	}
	if m.head, err = layers.NewLinear(ps.Scope("head"), layers.LinearConfig{In: dim, Out: 2}); err != nil {
		return nil, err
	}
	return &m, nil
}

// build is the graph: inputs "points" [B, points, 2] and "labels" [B] (0 circle, 1
// line); outputs the loss and the logits [B, 2].
func (m *model) build(g *autodiff.Graph) (autodiff.Outputs, error) {
	h := m.embed.Forward(g, g.Input("points"))            // [B, N, dim]
	h = g.Add(h, m.attn.Forward(g, m.norm.Forward(g, h))) // residual attention over the set
	set := g.Mean(h, 1)                                   // [B, dim]: order does not matter
	logits := m.head.Forward(g, g.Add(set, m.out.Forward(g, set)))
	loss := g.CrossEntropy(logits, g.Input("labels"), -100)
	return autodiff.Outputs{Loss: loss, Values: map[string]*autodiff.Node{"logits": logits}}, g.Err()
}

// fit trains the model for steps steps and returns its validation accuracy and its
// learned bandwidths.
func fit(steps int, progress io.Writer) (float64, []float64, error) {
	ps, err := autodiff.NewParams(autodiff.Float32, 1)
	if err != nil {
		return 0, nil, err
	}
	m, err := newModel(ps)
	if err != nil {
		return 0, nil, err
	}
	run := autodiff.NewModel(ps, m.build, 1)
	acfg := optim.DefaultAdamConfig()
	acfg.LR = 3e-3
	opt, err := optim.NewAdam(optim.All(ps.List()), acfg)
	if err != nil {
		return 0, nil, err
	}
	val, err := sets(512, rand.New(rand.NewPCG(99, 0)))
	if err != nil {
		return 0, nil, err
	}
	next := 0 // batch i is drawn from its own seed, so the position is one number
	data := train.NewData(func() (train.Batch, error) {
		next++
		b, err := sets(64, rand.New(rand.NewPCG(1, uint64(next))))
		return train.Batch{Inputs: b, Items: 64}, err
	}, func() int { return next }, func(i int) error { next = i; return nil })
	loop := &train.Loop{
		Model: run, Optimizer: opt, Data: data, Steps: steps, EvalEvery: max(1, steps/4),
		Eval: func(context.Context) (train.Metrics, error) {
			acc, err := accuracy(run, val)
			return train.Metrics{metricAcc: acc}, err
		},
		Observe: train.ObserveBandwidths(m.attn.Bandwidths), // logged as bandwidth.attn.head<j>
		Out:     progress,
	}
	sum, err := loop.Run(context.Background())
	if err != nil {
		return 0, nil, err
	}
	return sum.Eval[metricAcc], m.attn.Bandwidths()["attn.bandwidth"], nil
}

// accuracy is the fraction of the sets in inputs whose class the model predicts.
func accuracy(run *autodiff.Model, inputs map[string]*tensor.Dense) (float64, error) {
	res, err := run.Forward(inputs)
	if err != nil {
		return 0, err
	}
	logits, labels := res.Values["logits"].Data().([]float32), inputs["labels"].Data().([]int)
	right := 0
	for i, y := range labels {
		if pred := logits[2*i+1] > logits[2*i]; pred == (y == 1) {
			right++
		}
	}
	return float64(right) / float64(len(labels)), nil
}

// sets draws n sets, half circles and half line segments, with random centres in
// [-2, 2]², sizes and orientations, and a little noise; it returns the model's inputs.
func sets(n int, rng *rand.Rand) (map[string]*tensor.Dense, error) {
	xy := make([]float32, 0, n*points*2)
	labels := make([]int, n)
	for i := range n {
		cx, cy := 4*rng.Float64()-2, 4*rng.Float64()-2
		size := 0.5 + 1.5*rng.Float64()
		turn := 2 * math.Pi * rng.Float64()
		labels[i] = i % 2
		for range points {
			var x, y float64
			if labels[i] == 0 { // a circle of radius size
				a := 2 * math.Pi * rng.Float64()
				x, y = size*math.Cos(a), size*math.Sin(a)
			} else { // a segment of length 2·size through the centre
				x, y = size*(2*rng.Float64()-1), 0
			}
			x, y = x*math.Cos(turn)-y*math.Sin(turn), x*math.Sin(turn)+y*math.Cos(turn)
			xy = append(xy, float32(cx+x+0.02*rng.NormFloat64()), float32(cy+y+0.02*rng.NormFloat64()))
		}
	}
	p, err := autodiff.FromSlice(xy, n, points, 2)
	if err != nil {
		return nil, err
	}
	l, err := autodiff.FromSlice(labels, n)
	if err != nil {
		return nil, err
	}
	return map[string]*tensor.Dense{"points": p, "labels": l}, nil
}
