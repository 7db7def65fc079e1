package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

// TestAttentionDropoutGradients gradient-checks attention with dropout on its weights, in
// training: the standard kernel (AttentionDropout), a pair kernel with a learned
// bandwidth, kNN bandwidths (untiled while dropping), cross-attention with padding, and a
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

// runDropPath runs attention with cfg (its Dropout > 0) once in training, with the
// backward pass, optionally on the general path (unfused), from a fixed generator seed:
// it returns the output and every parameter's gradient in creation order.
func runDropPath(t *testing.T, dt autodiff.Dtype, cfg AttentionConfig, x, mem *tensor.Dense, call attnCall, unfused bool) (out []float64, grads [][]float64) {
	t.Helper()
	ps, err := autodiff.NewParams(dt, 11)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewKernelAttention(ps.Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.unfused = unfused
	b, tk := mem.Shape()[0], mem.Shape()[1]
	keyMask := make([]float64, b*tk)
	for i := range keyMask {
		keyMask[i] = float64(min(i%5, 1)) // every fifth key is padding
	}
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		var y *autodiff.Node
		if call == callCross {
			y = a.Attend(g, g.Input("x"), g.Input("mem"), AttendOptions{KeyMask: g.ConstTensor([]int{b, tk}, keyMask)})
		} else {
			y = a.Forward(g, g.Input("x"))
		}
		return autodiff.Outputs{Loss: projectLoss(g, y), Values: map[string]*autodiff.Node{"y": y}}, g.Err()
	}, 21)
	res, err := m.Run(map[string]*tensor.Dense{"x": castDense(x, dt), "mem": castDense(mem, dt)}, autodiff.RunMode{Train: true, Backward: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps.List() {
		g := make([]float64, p.Size())
		for i := range g {
			g[i] = p.GradAt(i)
		}
		grads = append(grads, g)
	}
	return denseFloats(res.Values["y"]), grads
}

// TestAttentionDropoutFusedMatchesGeneral: in training with Dropout, a layer whose kernel
// the fused ops evaluate keeps its fused path (AttentionDropout for standard attention,
// KernelAttention or TiledLocalMean with Dropout otherwise, on either layout) and computes what the general path (scores, then LocalMeanDropout) computes
// with the same generator: the same masks, so the same output and gradients up to
// round-off, in float64 and float32; and not what it computes without dropout.
func TestAttentionDropoutFusedMatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 11))
	const T = 40
	x := randDense(rng, 1, 2, T, 8)
	mem := randDense(rng, 1, 2, T-5, 8)
	cases := []struct {
		cfg  AttentionConfig
		call attnCall
	}{
		{AttentionConfig{Causal: true}, callSelf}, // standard: AttentionDropout
		{AttentionConfig{}, callCross},
		{AttentionConfig{Causal: true, Rotary: true}, callSelf}, // split heads: KernelAttention
		{AttentionConfig{Causal: true, Kernel: Gaussian{}, Bandwidth: BandwidthConfig{Mode: BandwidthHead}}, callSelf},
		{AttentionConfig{Window: 9, Kernel: Laplacian{}, Bandwidth: BandwidthConfig{Mode: BandwidthQuery}}, callSelf},
		{AttentionConfig{Kernel: Cauchy{}, Bandwidth: BandwidthConfig{Mode: BandwidthKNN, K: 3}, Tiling: TilingAlways}, callCross},
		{AttentionConfig{Hollow: true, Kernel: MustParseKernelSpec("mixture(gaussian, exponential)").Kernel}, callSelf},
		{AttentionConfig{Causal: true, Kernel: MustParseKernelSpec("epanechnikov * causal * relbias(3)").Kernel, Tiling: TilingAlways}, callSelf},
	}
	for _, c := range cases {
		cfg := c.cfg
		cfg.Dim, cfg.Heads, cfg.Dropout = 8, 2, 0.3
		for _, dt := range []autodiff.Dtype{autodiff.Float64, autodiff.Float32} {
			name := fmt.Sprintf("%v/call%d/%+v", dt, c.call, cfg)
			want, wantG := runDropPath(t, dt, cfg, x, mem, c.call, true)
			got, gotG := runDropPath(t, dt, cfg, x, mem, c.call, false)
			tolOut, tolGrad := 1e-12, 1e-10
			if dt == autodiff.Float32 {
				tolOut, tolGrad = 2e-5, 5e-4
			}
			if d := maxRelDiff(got, want); !(d <= tolOut) {
				t.Errorf("%s: output differs from the general path by %g", name, d)
			}
			for j := range wantG {
				if d := maxRelDiff(gotG[j], wantG[j]); !(d <= tolGrad) {
					t.Errorf("%s: gradient %d differs from the general path by %g", name, j, d)
				}
			}
			if dt == autodiff.Float64 {
				undropped := cfg
				undropped.Dropout = 0
				plain, _ := runDropPath(t, dt, undropped, x, mem, c.call, false)
				if d := maxRelDiff(got, plain); d < 1e-3 {
					t.Errorf("%s: differs from no dropout by only %g", name, d)
				}
			}
		}
	}
}

// TestAttentionDropoutKeepsFusedPath: a training step with attention dropout allocates
// about what the same step without dropout allocates, less than one more [B, H, T, T]
// array, where the general path (scores, weights, dropped weights and the scores'
// gradient) allocates several: the fused ops drop inside, the tiled one too (which
// holds no such array).
func TestAttentionDropoutKeepsFusedPath(t *testing.T) {
	const b, heads, T = 2, 2, 256
	x := randDense(rand.New(rand.NewPCG(3, 4)), 1, b, T, 8)
	pairs := float64(b * heads * T * T * 8) // bytes of one float64 [B, H, T, T] array
	step := func(cfg AttentionConfig, unfused bool) float64 {
		ps, _ := autodiff.NewParams(autodiff.Float64, 1)
		a, err := NewKernelAttention(ps.Root(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		a.unfused = unfused
		m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
			return autodiff.Outputs{Loss: g.Sum(g.Square(a.Forward(g, g.Input("x"))))}, g.Err()
		}, 1)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := m.Run(map[string]*tensor.Dense{"x": x}, autodiff.RunMode{Train: true, Backward: true}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc - before.TotalAlloc)
	}
	for _, cfg := range []AttentionConfig{
		{Dim: 8, Heads: heads, Causal: true},
		{Dim: 8, Heads: heads, Causal: true, Kernel: Gaussian{}, Bandwidth: BandwidthConfig{Mode: BandwidthHead}},
		{Dim: 8, Heads: heads, Causal: true, Kernel: Gaussian{}, Tiling: TilingAlways},
	} {
		name := "exponential"
		if cfg.Kernel != nil {
			name = cfg.Kernel.Name()
		}
		name += "/" + cfg.Tiling.String()
		plain := step(cfg, false)
		cfg.Dropout = 0.2
		fused, general := step(cfg, false), step(cfg, true)
		t.Logf("%s: a training step allocates %.1f MB without dropout, %.1f MB with, %.1f MB on the general path ([B, H, T, T]: %.1f MB)",
			name, plain/1e6, fused/1e6, general/1e6, pairs/1e6)
		if fused > plain+0.5*pairs || fused > general-2*pairs {
			t.Errorf("%s: a training step with dropout allocates %.1f MB, without %.1f MB, on the general path %.1f MB: want the fused path's",
				name, fused/1e6, plain/1e6, general/1e6)
		}
	}
}
