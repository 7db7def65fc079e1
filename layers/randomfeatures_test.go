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

// TestRandomFeatureGradients gradient-checks random-feature attention (float64):
// exponential and Gaussian kernels, fixed and per-head bandwidths, causal self-attention
// and padded cross-attention.
func TestRandomFeatureGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	x := randDense(rng, 1, 2, 3, 4)
	mem := randDense(rng, 1, 2, 4, 3)
	keyMask := []float64{1, 1, 1, 0, 1, 1, 0, 0}
	for i, cfg := range []AttentionConfig{
		{Dim: 4, Heads: 2, RandomFeatures: 5, Causal: true},
		{Dim: 4, Heads: 2, RandomFeatures: 3, Kernel: Gaussian{}, Bandwidth: BandwidthConfig{Mode: BandwidthHead, Init: 1.5}, KVDim: 3},
		{Dim: 4, Heads: 1, RandomFeatures: 6, Kernel: Product{Content: Gaussian{}, Position: Box{Causal: true}}, Bandwidth: BandwidthConfig{Mode: BandwidthLayer, Init: 2}},
		{Dim: 4, Heads: 2, RandomFeatures: 4, Bandwidth: BandwidthConfig{Mode: BandwidthHead}, Rotary: true, Causal: true},
	} {
		cross := cfg.KVDim > 0
		inputs := map[string]*tensor.Dense{"x": x}
		if cross {
			inputs["mem"] = mem
		}
		checkLayer(t, fmt.Sprintf("rf%d", i), func(s autodiff.Scope) (forwardFunc, error) {
			a, err := NewKernelAttention(s, cfg)
			return func(g *autodiff.Graph) *autodiff.Node {
				if cross {
					return a.Attend(g, g.Input("x"), g.Input("mem"), AttendOptions{KeyMask: g.ConstTensor([]int{2, 4}, keyMask)})
				}
				return a.Forward(g, g.Input("x"))
			}, err
		}, inputs, autodiff.GradCheck{})
	}
}

// TestRandomFeatureRefusals: incompatible kernels, bandwidths and options fail when the
// layer is built, with one line naming the cause.
func TestRandomFeatureRefusals(t *testing.T) {
	for _, c := range []struct {
		cfg  AttentionConfig
		want string
	}{
		{AttentionConfig{Dim: 4, Heads: 2, RandomFeatures: -1}, "RandomFeatures = -1"},
		{AttentionConfig{Dim: 4, Heads: 2, RandomFeatures: 8, Kernel: Laplacian{}}, "exponential or gaussian"},
		{AttentionConfig{Dim: 4, Heads: 2, RandomFeatures: 8, Kernel: Product{Content: Exponential{}, Position: Box{Window: 4}}}, "no position kernel but causal"},
		{AttentionConfig{Dim: 4, Heads: 2, RandomFeatures: 8, Bandwidth: BandwidthConfig{Mode: BandwidthQuery}}, "per-query or kNN"},
		{AttentionConfig{Dim: 4, Heads: 2, RandomFeatures: 8, Bandwidth: BandwidthConfig{Mode: BandwidthKNN}}, "per-query or kNN"},
		{AttentionConfig{Dim: 4, Heads: 2, RandomFeatures: 8, Window: 3}, "no window"},
	} {
		ps, _ := autodiff.NewParams(autodiff.Float64, 1)
		_, err := NewKernelAttention(ps.Scope("a"), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line with %q", c.cfg, err, c.want)
		}
	}
}

// TestOrthogonalFeatures: rows within a block are orthogonal, and the draw is
// deterministic in the seed.
func TestOrthogonalFeatures(t *testing.T) {
	const m, d = 10, 4
	w := OrthogonalFeatures(m, d, 7)
	for b := 0; b < m; b += d {
		for i := b; i < min(b+d, m); i++ {
			for j := b; j < i; j++ {
				var dot float64
				for c := range d {
					dot += w[i*d+c] * w[j*d+c]
				}
				if math.Abs(dot) > 1e-9 {
					t.Fatalf("rows %d and %d: dot %g", i, j, dot)
				}
			}
		}
	}
	w2 := OrthogonalFeatures(m, d, 7)
	for i := range w {
		if w[i] != w2[i] {
			t.Fatal("not deterministic")
		}
	}
}

// TestRandomFeatureConverges: with many features the random-feature layer computes the
// exact layer's function (same parameters), causal and bidirectional, both kernels.
func TestRandomFeatureConverges(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	x := randDense(rng, 0.5, 2, 5, 4)
	for _, cfg := range []AttentionConfig{
		{Dim: 4, Heads: 2, Causal: true},
		{Dim: 4, Heads: 2, Kernel: Gaussian{}, Bandwidth: BandwidthConfig{Mode: BandwidthHead, Init: 1.5}},
	} {
		outs := make([][]float64, 2)
		for i, m := range []int{0, 20000} {
			ps, _ := autodiff.NewParams(autodiff.Float64, 1)
			c := cfg
			c.RandomFeatures = m
			a, err := NewKernelAttention(ps.Scope("a"), c)
			if err != nil {
				t.Fatal(err)
			}
			res, err := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
				return autodiff.Outputs{Values: map[string]*autodiff.Node{"y": a.Forward(g, g.Input("x"))}}, g.Err()
			}, 0).Forward(map[string]*tensor.Dense{"x": x})
			if err != nil {
				t.Fatal(err)
			}
			outs[i] = res.Values["y"].Data().([]float64)
		}
		var worst float64
		for j := range outs[0] {
			worst = max(worst, math.Abs(outs[0][j]-outs[1][j]))
		}
		t.Logf("%+v: max |Δ| %.3g at m = 20000", cfg, worst)
		if worst > 0.01 {
			t.Errorf("%+v: max |Δ| %.3g at m = 20000, want <= 0.01", cfg, worst)
		}
	}
}
