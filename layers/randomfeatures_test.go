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

// composedFeatureAttend is AttendKV's random-feature path as it was before the fused op:
// the features, exponentials and softmax as separate graph ops, then CausalLinearAttention
// (causal) or two batched products, then the normalisation.
func composedFeatureAttend(g *autodiff.Graph, a *KernelAttention, x, mem *autodiff.Node, opt AttendOptions) *autodiff.Node {
	k, v := a.KeysValues(g, mem, 0)
	if g.Err() != nil {
		return nil
	}
	xs := x.Shape()
	b, tq, tk := xs[0], xs[1], k.Shape()[1]
	q := a.splitHeads(g, a.Q.Forward(g, x))
	if a.cfg.Rotary {
		q = ApplyRotary(g, q, opt.Offset, a.cfg.RotaryBase)
	}
	mask := restrictMask(a.Kernel, autodiff.Mask{Causal: a.cfg.Causal, Offset: opt.Offset})
	h := a.bw.width(g, x, q, k, opt.KeyMask, mask, b, tq, false)
	hk := a.bw.width(g, x, q, k, opt.KeyMask, mask, b, tk, false)
	phiQ, phiK := a.featureMaps(g, q, k, h, hk)
	n, m := b*a.Heads, a.cfg.RandomFeatures
	if opt.KeyMask != nil {
		p := g.Reshape(g.Transpose(g.Reshape(phiK, []int{b, a.Heads, tk, m}), 0, 2, 1, 3), []int{b, tk, a.Heads * m})
		p = g.ScaleRows(p, opt.KeyMask)
		phiK = g.Reshape(g.Transpose(g.Reshape(p, []int{b, tk, a.Heads, m}), 0, 2, 1, 3), []int{n, tk, m})
	}
	v1 := withOnes(g, v)
	var out *autodiff.Node
	if mask.Causal {
		out = g.CausalLinearAttention(phiQ, phiK, v1, mask.Offset)
	} else {
		out = g.BatchedMatMul(phiQ, g.BatchedMatMul(phiK, v1, true, false), false, false)
	}
	mean := featureMean(g, out)
	merged := g.Reshape(g.Transpose(g.Reshape(mean, []int{b, a.Heads, tq, a.DHead}), 0, 2, 1, 3), []int{b, tq, a.cfg.Dim})
	return a.O.Forward(g, merged)
}

// TestRandomFeatureFusedMatchesComposed checks that the fused op (RandomFeatureAttention)
// computes what the op-by-op composition computes, output and every parameter gradient,
// in float64 and float32, at T = 100 (causal self-attention, padded cross-attention, both
// kernels, fixed, per-layer and per-head bandwidths, rotary positions; the fixed
// bandwidths without rotary positions take the [B, T, Dim] layout, attendFeatures).
func TestRandomFeatureFusedMatchesComposed(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const T = 100
	x64, mem64 := randDense(rng, 1, 2, T, 8), randDense(rng, 1, 2, T+7, 6)
	keyMask := make([]float64, 2*(T+7))
	for i := range keyMask {
		keyMask[i] = float64(min(1, i%9)) // every 9th key hidden
	}
	for _, dt := range []autodiff.Dtype{autodiff.Float64, autodiff.Float32} {
		x, mem := x64, mem64
		if dt == autodiff.Float32 {
			x = tensor.New(tensor.WithShape(2, T, 8), tensor.WithBacking(toFloat32(x64.Float64s())))
			mem = tensor.New(tensor.WithShape(2, T+7, 6), tensor.WithBacking(toFloat32(mem64.Float64s())))
		}
		for i, cfg := range []AttentionConfig{
			{Dim: 8, Heads: 2, RandomFeatures: 32, Causal: true},
			{Dim: 8, Heads: 2, RandomFeatures: 16, Kernel: Gaussian{}, Bandwidth: BandwidthConfig{Mode: BandwidthHead, Init: 1.5}, KVDim: 6},
			{Dim: 8, Heads: 1, RandomFeatures: 24, Kernel: Gaussian{}, Bandwidth: BandwidthConfig{Mode: BandwidthLayer, Init: 2}, Causal: true},
			{Dim: 8, Heads: 2, RandomFeatures: 8, Bandwidth: BandwidthConfig{Mode: BandwidthHead}, Rotary: true, Causal: true},
			{Dim: 8, Heads: 2, RandomFeatures: 16, Kernel: Gaussian{}, Bandwidth: BandwidthConfig{Init: 1.7}, KVDim: 6},
			{Dim: 8, Heads: 4, RandomFeatures: 16, Kernel: Product{Content: Gaussian{}, Position: Box{Causal: true}}},
		} {
			run := func(composed bool) (out []float64, grads [][]float64) {
				ps, err := autodiff.NewParams(dt, 11)
				if err != nil {
					t.Fatal(err)
				}
				a, err := NewKernelAttention(ps.Root(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				jit := rand.New(rand.NewPCG(4, 4))
				for _, p := range ps.List() {
					for i := range p.Size() {
						p.SetAt(i, p.At(i)+0.1*jit.NormFloat64())
					}
				}
				cross := cfg.KVDim > 0
				mod := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
					xn, mn := g.Input("x"), g.Input("x")
					var opt AttendOptions
					if cross {
						mn = g.Input("mem")
						opt.KeyMask = g.ConstTensor([]int{2, T + 7}, keyMask)
					}
					var y *autodiff.Node
					if composed {
						y = composedFeatureAttend(g, a, xn, mn, opt)
					} else {
						y = a.Attend(g, xn, mn, opt)
					}
					return autodiff.Outputs{Loss: projectLoss(g, y), Values: map[string]*autodiff.Node{"y": y}}, g.Err()
				}, 1)
				res, err := mod.Run(map[string]*tensor.Dense{"x": x, "mem": mem}, autodiff.RunMode{Backward: true})
				if err != nil {
					t.Fatal(err)
				}
				y := res.Values["y"]
				for j := range y.Shape().TotalSize() {
					if dt == autodiff.Float32 {
						out = append(out, float64(y.Float32s()[j]))
					} else {
						out = append(out, y.Float64s()[j])
					}
				}
				for _, p := range ps.List() {
					g := make([]float64, p.Size())
					for j := range g {
						g[j] = p.GradAt(j)
					}
					grads = append(grads, g)
				}
				return out, grads
			}
			want, wantG := run(true)
			got, gotG := run(false)
			dOut, dGrad := maxRelDiff(got, want), 0.0
			for j := range wantG {
				dGrad = max(dGrad, maxRelDiff(gotG[j], wantG[j]))
			}
			tol := 1e-10
			if dt == autodiff.Float32 {
				tol = 1e-4
			}
			t.Logf("%v case %d: max |Δ| / max |x|: output %.3g, gradients %.3g", dt, i, dOut, dGrad)
			if dOut > tol || dGrad > tol {
				t.Errorf("%v case %d (%+v): fused vs composed: output %.3g, gradients %.3g of the largest entry, want <= %g", dt, i, cfg, dOut, dGrad, tol)
			}
		}
	}
}
