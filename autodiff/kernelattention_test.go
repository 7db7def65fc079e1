package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
)

// TestKernelAttentionMatchesReference checks KernelAttention's forward pass, on both
// layouts, against explicit scores normalised by naiveLocalMean (float64 and float32),
// and against TiledLocalMean, the same function computed tile by tile.
func TestKernelAttentionMatchesReference(t *testing.T) {
	for _, c := range tiledCases {
		params, inputs := c.tensors(1)
		want := c.reference(params, inputs)
		for _, dt := range []Dtype{Float64, Float32} {
			tol := 1e-12
			if dt == Float32 {
				tol = 2e-5
			}
			builds := map[string]func(*Graph, map[string]*Node) *Node{
				"split": c.buildWith((*Graph).KernelAttention), "features": c.buildInFeaturesWith((*Graph).KernelAttention),
			}
			tiled := evalOp(t, dt, false, params, inputs, c.build)
			for layout, build := range builds {
				got := evalOp(t, dt, false, params, inputs, build)
				var worst, worstTiled float64
				for i := range want {
					worst = math.Max(worst, math.Abs(got[i]-want[i]))
					worstTiled = math.Max(worstTiled, math.Abs(got[i]-tiled[i]))
				}
				if worst > tol || math.IsNaN(worst) || worstTiled > tol || math.IsNaN(worstTiled) {
					t.Errorf("%s %v %s: largest difference %g from the reference and %g from TiledLocalMean, want <= %g",
						c.name, dt, layout, worst, worstTiled, tol)
				}
			}
		}
	}
}

// TestKernelAttentionGradients gradient-checks KernelAttention, on both layouts, with
// respect to queries, keys, values, bandwidths (one, per head, per query) and the
// relative-bias table.
func TestKernelAttentionGradients(t *testing.T) {
	for _, c := range tiledCases {
		params, inputs := c.tensors(2)
		checkOp(t, c.name, params, inputs, c.buildWith((*Graph).KernelAttention), GradCheck{MaxPerTensor: 25, RTol: 1e-5, ATol: 1e-7})
		checkOp(t, c.name+"/features", params, inputs, c.buildInFeaturesWith((*Graph).KernelAttention), GradCheck{MaxPerTensor: 10, RTol: 1e-5, ATol: 1e-7})
	}
}

// TestKernelAttentionFloat32Rows checks the float32 runs of KernelAttention and
// TiledLocalMean against float64, loss and every gradient, for every case on both
// layouts: on the float32 rows of a PairKernel32 (rows32, and the tiles' tileScores32 and
// tileCoefs32) and of a mixture of them (rowsMix32, in both ops), and on the
// float64 rows that the other kernels take (a PairKernel32 behind only64, a mixture with
// a component without float32 rows), so that each float32 path meets an independent
// answer.
func TestKernelAttentionFloat32Rows(t *testing.T) {
	var worst [2][3]float64 // [op][float32 rows, float64 rows, a mixture's float32 rows]
	ops := []pairOp{(*Graph).KernelAttention, (*Graph).TiledLocalMean}
	for _, c := range tiledCases {
		params, inputs := c.tensors(7)
		for _, v := range params {
			f32Round(v)
		}
		variants := []tiledCase{c}
		if _, ok := c.kern.(PairKernel32); ok {
			h := c
			h.kern = only64{c.kern}
			if dk, ok := c.kern.(DirectPairKernel); ok {
				h.kern = only64Direct{dk}
			}
			variants = append(variants, h)
		}
		for _, v := range variants {
			for oi, op := range ops {
				path := 1 // the float64 rows
				if _, ok := v.kern.(PairKernel32); ok {
					path = 0
				}
				if mixComponents(v.kern) != nil {
					path = 2
				}
				for layout, build := range map[string]func(*Graph, map[string]*Node) *Node{
					"split": v.buildWith(op), "features": v.buildInFeaturesWith(op),
				} {
					l64, g64 := runGradsWith(t, Float64, params, inputs, build)
					l32, g32 := runGradsWith(t, Float32, params, inputs, build)
					name := fmt.Sprintf("%s/%T/op%d/%s", c.name, v.kern, oi, layout)
					if d := math.Abs(l32-l64) / (1 + math.Abs(l64)); !(d <= 1e-5) {
						t.Errorf("%s: float32 loss %v, float64 %v", name, l32, l64)
					}
					for n, want := range g64 {
						d := diffOfLargest(g32[n], want)
						worst[oi][path] = max(worst[oi][path], d)
						if !(d <= 2e-4) {
							t.Errorf("%s: float32 gradient of %s differs from float64 by %g of its largest magnitude", name, n, d)
						}
					}
				}
			}
		}
	}
	t.Logf("largest float32 − float64 gradient difference relative to the largest magnitude: KernelAttention rows32 %.2g, rows64 %.2g, rowsMix32 %.2g; TiledLocalMean float32 rows %.2g, float64 rows %.2g, mixture %.2g",
		worst[0][0], worst[0][1], worst[0][2], worst[1][0], worst[1][1], worst[1][2])
}

// diffOfLargest returns max |got − want| / max(max |want|, 0.01), +Inf where one is NaN
// and the other not.
func diffOfLargest(got, want []float64) float64 {
	scale := 0.01
	for _, v := range want {
		scale = max(scale, math.Abs(v))
	}
	var d float64
	for i, v := range want {
		d = max(d, math.Abs(got[i]-v)/scale)
		if math.IsNaN(got[i]) != math.IsNaN(v) {
			return math.Inf(1)
		}
	}
	return d
}

// TestKernelAttentionEdgeRows checks LocalMean's rules on KernelAttention and
// TiledLocalMean: a query that sees no key gets 0 and zero gradients, a query whose
// visible keys all lie outside a compact kernel's support too, and a NaN score makes its
// query's output NaN; in float64 (with gradient checks) and in float32 (on the float32
// rows of a kernel and of a mixture, and on the float64 rows).
func TestKernelAttentionEdgeRows(t *testing.T) {
	for _, op := range []pairOp{(*Graph).KernelAttention, (*Graph).TiledLocalMean} {
		testEdgeRows(t, op)
	}
}

// testEdgeRows is TestKernelAttentionEdgeRows for one op.
func testEdgeRows(t *testing.T, op pairOp) {
	build := func(c tiledCase) func(*Graph, map[string]*Node) *Node { return c.buildWith(op) }
	// zeroGrads checks that the float32 gradients of q, k and v are 0 from problem p0 on.
	zeroGrads := func(name string, c tiledCase, params, inputs map[string]*tensor.Dense, p0 int) {
		t.Helper()
		_, g := runGradsWith(t, Float32, params, inputs, build(c))
		for _, n := range []string{"q", "k", "v"} {
			v := g[n]
			for i, x := range v[p0*len(v)/(c.b*c.h):] {
				if x != 0 {
					t.Fatalf("%s float32: gradient of %s[%d] = %g, want 0", name, n, p0*len(v)/(c.b*c.h)+i, x)
				}
			}
		}
	}
	for _, kern := range []PairKernel{testExp{}, testMix{testExp{}, testLaplace{}}, only64{testExp{}}} {
		c := tiledCase{name: "allPadded", kern: kern, b: 2, h: 1, tq: 3, tk: 4, keyPad: true, hval: 1}
		params, inputs := c.tensors(3)
		for _, dt := range []Dtype{Float64, Float32} {
			got := evalOp(t, dt, false, params, inputs, build(c))
			for i, x := range got[3*2:] { // batch element 1 sees nothing
				if x != 0 {
					t.Fatalf("%T %v: output %d of a query with no visible key = %g, want 0", kern, dt, 6+i, x)
				}
			}
			if dt == Float32 { // batch element 1's queries, keys and values get no gradient
				zeroGrads(fmt.Sprintf("%T", kern), c, params, inputs, 1)
			}
		}
		checkOp(t, c.name, params, inputs, build(c), GradCheck{})
		q := params["q"].Float64s()
		q0 := q[0]
		q[0] = math.NaN()
		for _, dt := range []Dtype{Float64, Float32} {
			got := evalOp(t, dt, false, params, inputs, build(c))
			if !math.IsNaN(got[0]) || math.IsNaN(got[2]) {
				t.Fatalf("%T %v: NaN query: outputs %v, want NaN in row 0 only", kern, dt, got[:4])
			}
		}
		q[0] = q0
	}

	// Compact kernels at a bandwidth far below every distance: no key in the support.
	for _, kern := range []PairKernel{testEpan{}, testMix{testEpan{}, testEpan{}}, only64Direct{testEpan{}}} {
		e := tiledCase{name: "outsideSupport", kern: kern, b: 1, h: 1, tq: 4, tk: 5, hval: 1e-3}
		params, inputs := e.tensors(4)
		for _, dt := range []Dtype{Float64, Float32} {
			got := evalOp(t, dt, false, params, inputs, build(e))
			for i, x := range got {
				if x != 0 {
					t.Fatalf("%T %v: output %d of a query with no key in the support = %g, want 0", kern, dt, i, x)
				}
			}
			if dt == Float32 {
				zeroGrads(fmt.Sprintf("%T", kern), e, params, inputs, 0)
			}
		}
		checkOp(t, e.name, params, inputs, build(e), GradCheck{})
	}
}

// TestKernelAttentionWeights checks that LocalMeanWeights reads the op's weights: on
// both layouts they are [B, H, Tq, Tk], zero on hidden keys, sum to 1 per query, and
// reproduce the output as Σ_s w_ts v_s.
func TestKernelAttentionWeights(t *testing.T) {
	c := tiledCase{name: "gaussPad", kern: testGauss{}, b: 2, h: 2, tq: 6, tk: 6, mask: Mask{Causal: true}, keyPad: true, hval: 1.5}
	params, inputs := c.tensors(5)
	for _, layout := range []string{"split", "features"} {
		var w, vis *Node
		build := func(g *Graph, p map[string]*Node) *Node {
			var m *Node
			out := c.buildWith((*Graph).KernelAttention)(g, p)
			if layout == "features" {
				out = c.splitOutput(g, c.mergedOp(g, p, (*Graph).KernelAttention, &m))
			} else {
				m = out
			}
			w, vis = g.LocalMeanWeights(m)
			return g.Concat(0, g.Reshape(out, []int{c.b * c.h * c.tq * 2}), g.Reshape(w, []int{c.b * c.h * c.tq * c.tk}), g.Reshape(vis, []int{c.b * c.h * c.tq * c.tk}))
		}
		got := evalOp(t, Float64, false, params, inputs, build)
		if s := w.Shape(); len(s) != 4 || s[0] != c.b || s[1] != c.h || s[2] != c.tq || s[3] != c.tk {
			t.Fatalf("%s: weights %v, want [%d %d %d %d]", layout, s, c.b, c.h, c.tq, c.tk)
		}
		n := c.b * c.h * c.tq
		out, ws, vs := got[:n*2], got[n*2:n*2+n*c.tk], got[n*2+n*c.tk:]
		v := params["v"].Float64s()
		for p := range c.b * c.h {
			for q := range c.tq {
				row := ws[(p*c.tq+q)*c.tk : (p*c.tq+q+1)*c.tk]
				var sum, m0, m1 float64
				for s, x := range row {
					if vs[(p*c.tq+q)*c.tk+s] == 0 && x != 0 {
						t.Fatalf("%s: weight %g on a hidden key", layout, x)
					}
					sum += x
					m0 += x * v[(p*c.tk+s)*2]
					m1 += x * v[(p*c.tk+s)*2+1]
				}
				o := out[(p*c.tq+q)*2:]
				if (sum != 0 && math.Abs(sum-1) > 1e-12) || math.Abs(m0-o[0]) > 1e-12 || math.Abs(m1-o[1]) > 1e-12 {
					t.Fatalf("%s: problem %d query %d: weights sum to %g and give (%g, %g), output (%g, %g)", layout, p, q, sum, m0, m1, o[0], o[1])
				}
			}
		}
	}
}

// TestKernelAttentionErrors checks that bad shapes give errors naming the op.
func TestKernelAttentionErrors(t *testing.T) {
	c := tiledCase{name: "exp", kern: testExp{}, b: 1, h: 2, tq: 3, tk: 4, hval: 1}
	params, _ := c.tensors(6)
	params["h"] = tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 1, 1}))
	g := NewGraph(Float64, false, 1)
	p := map[string]*Node{}
	for name, x := range params {
		p[name] = g.ConstTensor(x.Shape(), x.Float64s())
	}
	if m := c.buildWith((*Graph).KernelAttention)(g, p); m != nil || g.Err() == nil {
		t.Fatalf("bandwidth [3] for 2 heads: got %v, error %v", m, g.Err())
	}
	if msg := g.Err().Error(); msg != "KernelAttention: bandwidth (3), want [1], [2] or [2, 3]" {
		t.Fatalf("error %q", msg)
	}
}

// perRow hides a row evaluator's block methods: kattnForward and kattnBackward then
// take its rows one at a time.
type perRow[T float] struct{ pairRows[T] }

// TestKernelAttentionBlockRows checks that the mixtures' row blocks (weightsBlock and
// coefsBlock, pass by pass) give the float32 weights, shifts, outputs and gradients of
// every input, bit for bit, that their rows one at a time give.
func TestKernelAttentionBlockRows(t *testing.T) {
	ran := 0
	for _, c := range tiledCases {
		if mixComponents(c.kern) == nil {
			continue
		}
		params, inputs := c.tensors(11)
		g := NewGraph(Float32, false, 1)
		p := map[string]*Node{}
		for _, m := range []map[string]*tensor.Dense{params, inputs} {
			for name, x := range m {
				p[name] = g.ConstTensor(x.Shape(), x.Float64s())
			}
		}
		opt := TiledOptions{Bandwidth: p["h"], RelBias: p["bias"], KeyMask: p["km"], KernelParams: p["theta"], Heads: c.h, Mask: c.mask}
		spec, nodes, ok := g.pairInputs("KernelAttention", c.kern, p["q"], p["k"], p["v"], opt)
		if !ok {
			t.Fatalf("%s: %v", c.name, g.Err())
		}
		in := make([]*tensor.Dense, len(nodes))
		for i, n := range nodes {
			in[i] = n.n.Value().(*tensor.Dense)
		}
		k := &kernelAttention{pairSpec: spec}
		d := k.dims(in)
		out := newDense(Float32, tensor.Shape{d.n, d.tq, d.dv})
		if err := k.forward(in, out); err != nil {
			t.Fatal(err)
		}
		want := [][]float32{append([]float32(nil), k.p32...), append([]float32(nil), out.Float32s()...)}
		shift, inv := append([]float64(nil), k.mixShift...), append([]float64(nil), k.mixInv...)
		one := func(rows func() pairRows[float32]) func() pairRows[float32] {
			return func() pairRows[float32] { return perRow[float32]{rows()} }
		}
		got := make([]float32, len(want[1]))
		kattnForward(k, d, gemm.Sgemm, tiledInputs[float32](&k.pairSpec, in), k.p32, k.dots32, got, one(k.rowsOf32(d, nil)))
		sameBits(t, c.name+" weights", k.p32, want[0])
		sameBits(t, c.name+" outputs", got, want[1])
		sameBits(t, c.name+" shifts", k.mixShift, shift)
		sameBits(t, c.name+" factors", k.mixInv, inv)

		rng := rand.New(rand.NewPCG(12, 13))
		gout := make([]float32, len(got))
		for i := range gout {
			gout[i] = float32(rng.NormFloat64())
		}
		var grads [2][]*tensor.Dense
		for v, block := range []bool{true, false} {
			grads[v] = gradBuffers(nil, in)
			gr := tiledInputs[float32](&k.pairSpec, grads[v])
			acc := k.newAcc(d, gr.h != nil, gr.bias != nil, gr.theta != nil)
			rows := k.rowsOf32(d, acc)
			if !block {
				rows = one(rows)
			}
			kattnBackward(k, d, gemm.Sgemm, tiledInputs[float32](&k.pairSpec, in), k.p32, k.dots32, got, gout, gr, acc, rows)
		}
		for i := range in {
			if k.floatInputs()[i] {
				sameBits(t, fmt.Sprintf("%s gradient of input %d", c.name, i), grads[1][i].Float32s(), grads[0][i].Float32s())
			}
		}
		ran++
	}
	if ran < 7 {
		t.Fatalf("%d mixture cases, want at least 7", ran)
	}
}

// sameBits fails t at the first value of got that differs from want's bit for bit, any
// NaN matching any NaN (float32 values compare through float64, which keeps every bit).
func sameBits[T float](t *testing.T, name string, got, want []T) {
	t.Helper()
	for i, w := range want {
		if g := got[i]; math.Float64bits(float64(g)) != math.Float64bits(float64(w)) && !(g != g && w != w) {
			t.Fatalf("%s [%d]: %g, %g by blocks", name, i, g, w)
		}
	}
}
