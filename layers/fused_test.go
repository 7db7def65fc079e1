package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

// attnCall is how a test calls an attention layer: self-attention, a cached decoder's
// last queries (offset), or cross-attention over padded keys.
type attnCall int

const (
	callSelf attnCall = iota
	callDecode
	callCross
)

// runAttentionPath is runAttention at dtype dt, optionally on the general path
// (unfused), with taps: it returns the output, every parameter's gradient in creation
// order, and the tapped local-mean weights.
func runAttentionPath(t *testing.T, dt autodiff.Dtype, cfg AttentionConfig, x, mem *tensor.Dense, call attnCall, unfused bool) (out []float64, grads [][]float64, weights []float64) {
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
	rng := rand.New(rand.NewPCG(4, 4))
	for _, p := range ps.List() {
		for i := range p.Size() {
			p.SetAt(i, p.At(i)+0.1*rng.NormFloat64())
		}
	}
	b, tk := mem.Shape()[0], mem.Shape()[1]
	keyMask := make([]float64, b*tk)
	for i := range keyMask {
		keyMask[i] = float64(min(i%5, 1)) // every fifth key is padding
	}
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		xn := g.Input("x")
		var y *autodiff.Node
		switch call {
		case callDecode: // the last 3 queries against every key, as a cached decoder runs them
			tq := x.Shape()[1]
			k, v := a.KeysValues(g, xn, 0)
			y = a.AttendKV(g, g.Slice(xn, 1, tq-3, tq), k, v, AttendOptions{Offset: tq - 3})
		case callCross:
			y = a.Attend(g, xn, g.Input("mem"), AttendOptions{KeyMask: g.ConstTensor([]int{b, tk}, keyMask)})
		default:
			y = a.Forward(g, xn)
		}
		return autodiff.Outputs{Loss: projectLoss(g, y), Values: map[string]*autodiff.Node{"y": y}}, g.Err()
	}, 1)
	res, err := m.Run(map[string]*tensor.Dense{"x": castDense(x, dt), "mem": castDense(mem, dt)}, autodiff.RunMode{Backward: true, Taps: true})
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
	w := res.Taps[TapWeights]
	if w == nil {
		t.Fatalf("%+v: no tapped weights", cfg)
	}
	return denseFloats(res.Values["y"]), grads, denseFloats(w)
}

func castDense(x *tensor.Dense, dt autodiff.Dtype) *tensor.Dense {
	if dt == autodiff.Float32 {
		return tensor.New(tensor.WithShape(x.Shape()...), tensor.WithBacking(toFloat32(x.Float64s())))
	}
	return x
}

func denseFloats(x *tensor.Dense) []float64 {
	if x.Dtype() == autodiff.Float64 {
		return append([]float64(nil), x.Float64s()...)
	}
	out := make([]float64, x.Shape().TotalSize())
	for i, v := range x.Float32s() {
		out[i] = float64(v)
	}
	return out
}

// TestFusedMatchesGeneral checks that the fused kernel-attention ops (KernelAttention on
// the [B, T, Dim] layout or on split heads) compute what the general path computes
// (materialised scores, then LocalMean): output, tapped weights and every parameter
// gradient, in float64 and float32, for every kernel the fused ops evaluate and every
// bandwidth mode, under causal, window and hollow masks, a cached decoder's offset and
// padded cross-attention, over lengths that span several row blocks.
func TestFusedMatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 10))
	const T = 40
	x := randDense(rng, 1, 2, T, 8)
	mem := randDense(rng, 1, 2, T-5, 8)
	kernels := append(tiledKernelCases(), Tricube{}, MustParseKernelSpec("epanechnikov * causal * relbias(3)").Kernel,
		// two components on the fused mixture loops: both linear (a dot product and a
		// distance, a squared distance and a dot product), a rational one second, then
		// first, and beside a dot product, whose scores make each row's shift its own
		MustParseKernelSpec("mixture(exponential, laplacian)").Kernel, MustParseKernelSpec("mixture(gaussian, exponential)").Kernel,
		MustParseKernelSpec("mixture(gaussian, cauchy)").Kernel, MustParseKernelSpec("mixture(cauchy, laplacian)").Kernel,
		MustParseKernelSpec("mixture(exponential, cauchy)").Kernel)
	worst := map[autodiff.Dtype][3]float64{}
	i := 0
	for _, kern := range kernels {
		for _, mode := range bandwidthModes {
			if _, uniform := contentOf(kern).(Uniform); uniform && learnsBandwidth(mode) {
				continue
			}
			cfg := AttentionConfig{Dim: 8, Heads: 2, Kernel: kern, Bandwidth: BandwidthConfig{Mode: mode, K: 3}}
			ps, _ := autodiff.NewParams(autodiff.Float64, 1)
			if a, err := NewKernelAttention(ps.Root(), cfg); err != nil {
				t.Fatal(err)
			} else if _, ok := a.pairKernel(); !ok {
				continue // a kernel without the pair form: the general path either way
			}
			call := callSelf
			switch i % 5 {
			case 0:
				cfg.Causal = true
			case 1:
				cfg.Window = 9
			case 2:
				cfg.Causal, call = true, callDecode
			case 3:
				cfg.Hollow = true
			case 4:
				call = callCross
			}
			i++
			for _, dt := range []autodiff.Dtype{autodiff.Float64, autodiff.Float32} {
				name := fmt.Sprintf("%s/%v/%v/call%d/%+v", kern.Name(), mode, dt, call, cfg)
				want, wantG, wantW := runAttentionPath(t, dt, cfg, x, mem, call, true)
				got, gotG, gotW := runAttentionPath(t, dt, cfg, x, mem, call, false)
				tolOut, tolGrad := 1e-12, 1e-10
				if dt == autodiff.Float32 {
					tolOut, tolGrad = 2e-5, 5e-4
				}
				w := worst[dt]
				d := maxRelDiff(got, want)
				w[0] = math.Max(w[0], d)
				if !(d <= tolOut) {
					t.Errorf("%s: output differs from the general path by %g", name, d)
				}
				d = maxRelDiff(gotW, wantW)
				w[1] = math.Max(w[1], d)
				if !(d <= tolOut) {
					t.Errorf("%s: tapped weights differ from the general path by %g", name, d)
				}
				for j := range wantG {
					d := maxRelDiff(gotG[j], wantG[j])
					w[2] = math.Max(w[2], d)
					if !(d <= tolGrad) {
						t.Errorf("%s: gradient %d differs from the general path by %g", name, j, d)
					}
				}
				worst[dt] = w
			}
		}
	}
	for dt, w := range worst {
		t.Logf("largest difference fused vs general (%v), relative to the largest magnitude (at least 0.01): output %.2g, weights %.2g, gradients %.2g", dt, w[0], w[1], w[2])
	}
}
