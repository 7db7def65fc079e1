package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

// TestAttentionDropoutGradients gradient-checks attention with dropout on its weights, in
// training: the standard kernel (whose fused op gives way to the general path), a pair
// kernel with a learned bandwidth, kNN bandwidths, cross-attention with padding, and a
// GPT-2 block (residual and attention dropout, no biases).
func TestAttentionDropoutGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	x := randDense(rng, 1, 2, 4, 4)
	mem := randDense(rng, 1, 2, 3, 4)
	keyMask := []float64{1, 1, 0, 1, 1, 1}
	for _, cfg := range []AttentionConfig{
		{Dim: 4, Heads: 2, Causal: true, Dropout: 0.3},
		{Dim: 4, Heads: 2, Causal: true, Kernel: Gaussian{}, Bandwidth: BandwidthConfig{Mode: BandwidthHead}, Dropout: 0.5},
		{Dim: 4, Heads: 2, Kernel: Cauchy{}, Bandwidth: BandwidthConfig{Mode: BandwidthKNN, K: 2, Min: 0.05}, Dropout: 0.2, Tiling: TilingAlways},
		{Dim: 4, Heads: 1, KVDim: 4, Dropout: 0.4, NoBias: true},
	} {
		cross := cfg.KVDim > 0
		inputs := map[string]*tensor.Dense{"x": x}
		if cross {
			inputs["mem"] = mem
		}
		checkLayer(t, fmt.Sprintf("%+v", cfg), func(s autodiff.Scope) (forwardFunc, error) {
			a, err := NewKernelAttention(s, cfg)
			return func(g *autodiff.Graph) *autodiff.Node {
				if cross {
					return a.Attend(g, g.Input("x"), g.Input("mem"), AttendOptions{KeyMask: g.ConstTensor([]int{2, 3}, keyMask)})
				}
				return a.Forward(g, g.Input("x"))
			}, err
		}, inputs, autodiff.GradCheck{Train: true})
	}
	checkLayer(t, "gpt2-block", func(s autodiff.Scope) (forwardFunc, error) {
		b, err := NewBlock(s, BlockConfig{Dim: 4, Heads: 2, Hidden: 8, Dropout: 0.2, NoBias: true, Init: InitGPT2, Depth: 2,
			Activation: GELUExact, Attention: AttentionConfig{Causal: true, Dropout: 0.2}})
		return func(g *autodiff.Graph) *autodiff.Node { return b.Forward(g, g.Input("x")) }, err
	}, map[string]*tensor.Dense{"x": x}, autodiff.GradCheck{Train: true})
}

// TestAttentionDropoutTrainOnly: in evaluation a layer with attention dropout computes
// what the same weights compute without it; in training it computes something else.
func TestAttentionDropoutTrainOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	x := randDense(rng, 1, 2, 8, 8)
	for _, kern := range []ContentKernel{Exponential{}, Gaussian{}} {
		run := func(p float64, train bool) []float64 {
			ps, _ := autodiff.NewParams(autodiff.Float64, 4)
			a, err := NewKernelAttention(ps.Root(), AttentionConfig{Dim: 8, Heads: 2, Causal: true, Kernel: kern, Dropout: p})
			if err != nil {
				t.Fatal(err)
			}
			m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
				return autodiff.Outputs{Values: map[string]*autodiff.Node{"y": a.Forward(g, g.Input("x"))}}, g.Err()
			}, 5)
			res, err := m.Run(map[string]*tensor.Dense{"x": x}, autodiff.RunMode{Train: train})
			if err != nil {
				t.Fatal(err)
			}
			return res.Values["y"].Data().([]float64)
		}
		diff := func(a, b []float64) (d float64) {
			for i := range a {
				d = max(d, math.Abs(a[i]-b[i]))
			}
			return d
		}
		ref := run(0, true)
		if d := diff(run(0.5, false), ref); d > 1e-12 {
			t.Errorf("%s: evaluation with dropout 0.5 differs from no dropout by %g", kern.Name(), d)
		}
		if d := diff(run(0.5, true), ref); d < 1e-3 {
			t.Errorf("%s: training with dropout 0.5 differs from no dropout by only %g", kern.Name(), d)
		}
	}
}

func TestAttentionDropoutRefused(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float64, 1)
	for _, tc := range []struct {
		cfg  AttentionConfig
		want string
	}{
		{AttentionConfig{Dim: 4, Heads: 2, Dropout: 1}, "AttentionConfig.Dropout = 1, want 0 <= p < 1"},
		{AttentionConfig{Dim: 4, Heads: 2, Dropout: math.NaN()}, "AttentionConfig.Dropout = NaN"},
		{AttentionConfig{Dim: 4, Heads: 2, Dropout: 0.1, RandomFeatures: 8}, "random-feature attention has no weights to drop"},
	} {
		if _, err := NewKernelAttention(ps.Scope(fmt.Sprint(len(tc.want))), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
