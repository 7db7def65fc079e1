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

// tiledKernelCases are the kernels the tiled local mean is checked with: every content
// kernel, mixtures (with a compact component, and in a product with a relative position
// kernel), position kernels alone and in products.
func tiledKernelCases() []ContentKernel {
	return append(kernelCases(), Tricube{}, MustParseKernelSpec("exponential * window(3) * distance(0.2)").Kernel,
		MustParseKernelSpec("mixture(laplacian, epanechnikov, tricube) * relbias(2)").Kernel)
}

// TestTiledKernelBandwidthGradients gradient-checks kernel attention on the tiled path
// for every kernel × bandwidth mode, alternating causal self-attention and padded
// cross-attention, as TestKernelBandwidthGradients does on the stored path.
func TestTiledKernelBandwidthGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := randDense(rng, 1, 2, 3, 4)
	mem := randDense(rng, 1, 2, 4, 3)
	keyMask := []float64{1, 1, 1, 0, 1, 1, 0, 0}
	i := 0
	for _, kern := range tiledKernelCases() {
		for _, mode := range bandwidthModes {
			if _, uniform := contentOf(kern).(Uniform); uniform && learnsBandwidth(mode) {
				continue
			}
			cross := i%2 == 1
			i++
			name := fmt.Sprintf("%s/%v/cross=%v", kern.Name(), mode, cross)
			inputs := map[string]*tensor.Dense{"x": x}
			cfg := AttentionConfig{Dim: 4, Heads: 2, Kernel: kern, Bandwidth: BandwidthConfig{Mode: mode, K: 2, Min: 0.05}, Causal: !cross, Tiling: TilingAlways}
			if cross {
				cfg.KVDim = 3
				inputs["mem"] = mem
			}
			checkLayer(t, name, func(s autodiff.Scope) (forwardFunc, error) {
				a, err := NewKernelAttention(s, cfg)
				return func(g *autodiff.Graph) *autodiff.Node {
					if cross {
						return a.Attend(g, g.Input("x"), g.Input("mem"), AttendOptions{KeyMask: g.ConstTensor([]int{2, 4}, keyMask)})
					}
					return a.Forward(g, g.Input("x"))
				}, err
			}, inputs, autodiff.GradCheck{MaxPerTensor: 3})
		}
	}
}

// runAttention builds a float32 attention layer (seeded parameters, jittered so that the
// zero-initialised ones count), runs forward and backward on x, and returns the output
// and every parameter's gradient, in creation order.
func runAttention(t *testing.T, cfg AttentionConfig, x *tensor.Dense, decode bool) (out []float64, grads [][]float64) {
	t.Helper()
	ps, err := autodiff.NewParams(autodiff.Float32, 11)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewKernelAttention(ps.Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for _, p := range ps.List() {
		for i := range p.Size() {
			p.SetAt(i, p.At(i)+0.1*rng.NormFloat64())
		}
	}
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		xn := g.Input("x")
		var y *autodiff.Node
		if decode { // the last 3 queries against every key, as a cached decoder runs them
			tq := x.Shape()[1]
			q := g.Slice(xn, 1, tq-3, tq)
			k, v := a.KeysValues(g, xn, 0)
			y = a.AttendKV(g, q, k, v, AttendOptions{Offset: tq - 3})
		} else {
			y = a.Forward(g, xn)
		}
		return autodiff.Outputs{Loss: projectLoss(g, y), Values: map[string]*autodiff.Node{"y": y}}, g.Err()
	}, 1)
	res, err := m.Run(map[string]*tensor.Dense{"x": x}, autodiff.RunMode{Backward: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Values["y"].Float32s() {
		out = append(out, float64(v))
	}
	for _, p := range ps.List() {
		g := make([]float64, p.Size())
		for i := range g {
			g[i] = p.GradAt(i)
		}
		grads = append(grads, g)
	}
	return out, grads
}

// TestTiledMatchesStored checks that the tiled local mean computes what the stored one
// computes, output and every parameter gradient, in float32, over lengths that span
// several row blocks and key tiles, for every kernel and bandwidth mode and the masks.
func TestTiledMatchesStored(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	const T = 100
	x := randDense(rng, 1, 2, T, 8)
	x32 := tensor.New(tensor.WithShape(2, T, 8), tensor.WithBacking(toFloat32(x.Float64s())))
	var worstOut, worstGrad float64
	i := 0
	// Mixtures of two components take the fused mixture loops in the tiles too: two
	// linear ones, a linear and a rational one.
	kernels := append(tiledKernelCases(), MustParseKernelSpec("mixture(exponential, laplacian)").Kernel,
		MustParseKernelSpec("mixture(gaussian, cauchy)").Kernel)
	for _, kern := range kernels {
		for _, mode := range bandwidthModes {
			if _, uniform := contentOf(kern).(Uniform); uniform && learnsBandwidth(mode) {
				continue
			}
			i++
			cfg := AttentionConfig{Dim: 8, Heads: 2, Kernel: kern, Bandwidth: BandwidthConfig{Mode: mode, K: 3}}
			decode := false
			switch i % 4 {
			case 0:
				cfg.Causal = true
			case 1:
				cfg.Window = 40
			case 2:
				cfg.Causal, decode = true, true
			case 3:
				cfg.Hollow = true
			}
			name := fmt.Sprintf("%s/%v/%+v", kern.Name(), mode, cfg)
			cfg.Tiling = TilingNever
			want, wantG := runAttention(t, cfg, x32, decode)
			cfg.Tiling = TilingAlways
			got, gotG := runAttention(t, cfg, x32, decode)
			d := maxRelDiff(got, want)
			worstOut = math.Max(worstOut, d)
			if !(d <= 2e-5) {
				t.Errorf("%s: output differs from the stored path by %g (relative to the largest value, at least 0.01)", name, d)
			}
			for j := range wantG {
				d := maxRelDiff(gotG[j], wantG[j])
				worstGrad = math.Max(worstGrad, d)
				if !(d <= 5e-4) {
					t.Errorf("%s: gradient %d differs from the stored path by %g (relative to its largest value, at least 0.01)", name, j, d)
				}
			}
		}
	}
	t.Logf("largest difference tiled vs stored (float32), relative to the largest magnitude (at least 0.01): output %.2g, gradients %.2g", worstOut, worstGrad)
}

// maxRelDiff returns max |a − b| / max(max |b|, 0.01): relative to the largest value,
// absolute for values near 0 (the key bias's gradient under the exponential kernel,
// which is 0 up to round-off).
func maxRelDiff(a, b []float64) float64 {
	var d, m float64
	for i := range b {
		d = math.Max(d, math.Abs(a[i]-b[i]))
		m = math.Max(m, math.Abs(b[i]))
	}
	return d / math.Max(m, 0.01)
}

func toFloat32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// TestTilingConfig checks the tiling choice's text form and its validation.
func TestTilingConfig(t *testing.T) {
	var tl Tiling
	if err := tl.UnmarshalText([]byte("always")); err != nil || tl != TilingAlways {
		t.Fatalf("UnmarshalText(always) = %v, %v", tl, err)
	}
	if err := tl.UnmarshalText([]byte("sometimes")); err == nil || !strings.Contains(err.Error(), "auto, never, always") {
		t.Fatalf("UnmarshalText(sometimes): %v, want the valid names", err)
	}
	if err := (AttentionConfig{Dim: 4, Heads: 2, Tiling: 7}).Validate(); err == nil {
		t.Fatal("Tiling 7 validated")
	}
}

// TestTilingAuto checks which lengths TilingAuto tiles: kernels from TiledMinKeys keys,
// standard attention from TiledMinKeysStandard, and a kernel the tiles cannot evaluate
// (a mixture with a nested mixture) never; a mixture of pair kernels tiles.
func TestTilingAuto(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	build := func(name string, k ContentKernel) *KernelAttention {
		a, err := NewKernelAttention(ps.Scope(name), AttentionConfig{Dim: 4, Heads: 2, Kernel: k})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	std, gauss := build("std", Exponential{}), build("gauss", Gaussian{})
	mix := build("mix", Mixture{Kernels: []ContentKernel{Gaussian{}, Cauchy{}}})
	nested := build("nested", Mixture{Kernels: []ContentKernel{Gaussian{}, Mixture{Kernels: []ContentKernel{Cauchy{}, Laplacian{}}}}})
	g := autodiff.NewGraph(autodiff.Float32, false, 0)
	for _, c := range []struct {
		a    *KernelAttention
		tk   int
		want bool
	}{
		{std, TiledMinKeysStandard - 1, false}, {std, TiledMinKeysStandard, true},
		{gauss, TiledMinKeys - 1, false}, {gauss, TiledMinKeys, true},
	} {
		if got := c.a.tiles(g, c.tk); got != c.want {
			t.Errorf("%s over %d keys: tiles %v, want %v", c.a.Kernel.Name(), c.tk, got, c.want)
		}
	}
	if _, ok := mix.pairKernel(); !ok || !mix.tiles(g, TiledMinKeys) {
		t.Error("a mixture of pair kernels does not take the tiled form")
	}
	if _, ok := nested.pairKernel(); ok {
		t.Error("a mixture with a nested mixture claims the tiled form")
	}
}

// TestTilingKeepsTappedWeights checks that a graph built with taps keeps the stored
// weights, so that inspection sees them even where the layer would tile.
func TestTilingKeepsTappedWeights(t *testing.T) {
	for _, k := range []ContentKernel{Exponential{}, Gaussian{}} {
		ps, _ := autodiff.NewParams(autodiff.Float32, 1)
		a, err := NewKernelAttention(ps.Root(), AttentionConfig{Dim: 4, Heads: 2, Kernel: k, Causal: true, Tiling: TilingAlways})
		if err != nil {
			t.Fatal(err)
		}
		m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
			return autodiff.Outputs{Values: map[string]*autodiff.Node{"y": a.Forward(g, g.Input("x"))}}, g.Err()
		}, 1)
		x := tensor.New(tensor.WithShape(1, 3, 4), tensor.WithBacking(make([]float32, 12)))
		res, err := m.Run(map[string]*tensor.Dense{"x": x}, autodiff.RunMode{Taps: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Taps[TapWeights] == nil {
			t.Errorf("%s: no tapped weights among %d taps", k.Name(), len(res.Taps))
		}
	}
}
