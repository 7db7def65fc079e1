package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// Pair kernels of the test: the exponential, Gaussian and Epanechnikov kernels written
// out here, independently of package layers.
type testExp struct{}

func (testExp) Name() string                { return "exp" }
func (testExp) PairTerms() (dot, dist bool) { return true, false }
func (testExp) PairScores(s, dot, _ []float64, h float64) {
	for j, x := range dot {
		s[j] = x / h
	}
}
func (testExp) PairGrads(gs, dot, _ []float64, h float64, gdot, _ []float64) float64 {
	var gh float64
	for j, g := range gs {
		gdot[j] = g / h
		gh -= g * dot[j] / (h * h)
	}
	return gh
}

// testExp and testLaplace are LinearPairKernel32s (their scores a factor times the term),
// testGauss is not: mixtures of them run both of rowsMix32's paths.
func (testExp) PairFactor32(h float32) (float32, float64) { return 1 / h, -1 / float64(h*h) }
func (testExp) PairScores32(s, x []float32, h float32) {
	c, _ := testExp{}.PairFactor32(h)
	for j, v := range x {
		s[j] = c * v
	}
}
func (testExp) PairGrads32(g, x []float32, h float32) float64 {
	var gh float64
	for j, v := range g {
		gh -= float64(v) * float64(x[j]) / float64(h*h)
		g[j] = v / h
	}
	return gh
}

type testGauss struct{}

func (testGauss) Name() string                { return "gauss" }
func (testGauss) PairTerms() (dot, dist bool) { return false, true }
func (testGauss) PairScores(s, _, d2 []float64, h float64) {
	for j, x := range d2 {
		s[j] = -x / (2 * h * h)
	}
}
func (testGauss) PairGrads(gs, _, d2 []float64, h float64, _, gd2 []float64) float64 {
	var gh float64
	for j, g := range gs {
		gd2[j] = -g / (2 * h * h)
		gh += g * d2[j] / (h * h * h)
	}
	return gh
}

func (testGauss) PairScores32(s, x []float32, h float32) {
	for j, v := range x {
		s[j] = -v / (2 * h * h)
	}
}
func (testGauss) PairGrads32(g, x []float32, h float32) float64 {
	var gh float64
	for j, v := range g {
		gh += float64(v) * float64(x[j]) / float64(h*h*h)
		g[j] = -v / (2 * h * h)
	}
	return gh
}

type testEpan struct{}

func (testEpan) Name() string                { return "epan" }
func (testEpan) PairTerms() (dot, dist bool) { return false, true }
func (testEpan) PairScores(s, _, d2 []float64, h float64) {
	for j, x := range d2 {
		u := x / (h * h)
		if u >= 1 {
			s[j] = math.Inf(-1)
			continue
		}
		s[j] = math.Log1p(-u)
	}
}
func (testEpan) PairValues(k, _, d2 []float64, h float64) {
	for j, x := range d2 {
		k[j] = max(1-x/(h*h), 0)
	}
}
func (testEpan) PairGrads(gs, _, d2 []float64, h float64, _, gd2 []float64) float64 {
	var gh float64
	for j, g := range gs {
		u := d2[j] / (h * h)
		if g == 0 || u >= 1 {
			continue
		}
		gd2[j] = -g / (h * h) / (1 - u)
		gh += g * 2 * u / h / (1 - u)
	}
	return gh
}

func (testEpan) PairScores32(s, x []float32, h float32) {
	for j, v := range x {
		u := v / (h * h)
		if u >= 1 {
			s[j] = float32(math.Inf(-1))
			continue
		}
		s[j] = float32(math.Log1p(-float64(u)))
	}
}
func (testEpan) PairValues32(k, x []float32, h float32) {
	for j, v := range x {
		k[j] = max(1-v/(h*h), 0)
	}
}
func (testEpan) PairGrads32(g, x []float32, h float32) float64 {
	var gh float64
	for j, v := range g {
		u := x[j] / (h * h)
		if v == 0 || u >= 1 {
			g[j] = 0
			continue
		}
		gh += float64(v * 2 * u / h / (1 - u))
		g[j] = -v / (h * h) / (1 - u)
	}
	return gh
}

// testLaplace is log K = −‖q − k‖ / h, whose float32 rows read the distance
// (DistancePairKernel32).
type testLaplace struct{}

func (testLaplace) Name() string                { return "laplace" }
func (testLaplace) PairTerms() (dot, dist bool) { return false, true }
func (testLaplace) PairScores(s, _, d2 []float64, h float64) {
	for j, x := range d2 {
		s[j] = -math.Sqrt(x) / h
	}
}
func (testLaplace) PairGrads(gs, _, d2 []float64, h float64, _, gd2 []float64) float64 {
	var gh float64
	for j, g := range gs {
		r := math.Sqrt(d2[j])
		if g == 0 || r == 0 {
			continue
		}
		gd2[j] = -g / (2 * r * h)
		gh += g * r / (h * h)
	}
	return gh
}
func (testLaplace) PairDistance32()                           {}
func (testLaplace) PairFactor32(h float32) (float32, float64) { return -1 / h, 1 / float64(h*h) }
func (testLaplace) PairScores32(s, r []float32, h float32) {
	c, _ := testLaplace{}.PairFactor32(h)
	for j, v := range r {
		s[j] = c * v
	}
}
func (testLaplace) PairGrads32(g, r []float32, h float32) float64 {
	var gh float64
	for j, v := range g {
		gh += float64(v) * float64(r[j]) / float64(h*h)
		g[j] = -v / h
	}
	return gh
}

// testUniform is the constant kernel, log K = 0: the scores read neither term.
type testUniform struct{}

func (testUniform) Name() string                                                   { return "uniform" }
func (testUniform) PairTerms() (dot, dist bool)                                    { return false, false }
func (testUniform) PairScores(s, _, _ []float64, _ float64)                        { clear(s) }
func (testUniform) PairGrads(_, _, _ []float64, _ float64, _, _ []float64) float64 { return 0 }
func (testUniform) PairScores32(s, _ []float32, _ float32)                         { clear(s) }
func (testUniform) PairGrads32(g, _ []float32, _ float32) float64 {
	clear(g)
	return 0
}

// only64 hides a kernel's float32 rows: KernelAttention evaluates it through the float64
// PairKernel in float32 runs too; only64Direct keeps DirectPairKernel.
type only64 struct{ PairKernel }
type only64Direct struct{ DirectPairKernel }

type tiledCase struct {
	name         string
	kern         PairKernel
	b, h, tq, tk int
	mask         Mask
	keyPad, rows bool // key padding; per-row bandwidths
	perHead      bool // per-head bandwidths [h]
	biasM, biasP int  // relative bias table, if biasM > 0
	hval         float64
}

var tiledCases = []tiledCase{
	{name: "exp", kern: testExp{}, b: 1, h: 2, tq: 70, tk: 70, hval: 2},
	{name: "expCausalBias", kern: testExp{}, b: 2, h: 2, tq: 80, tk: 80, mask: Mask{Causal: true}, biasM: 5, biasP: 2, hval: 1.5},
	{name: "gaussWindowRows", kern: testGauss{}, b: 1, h: 2, tq: 90, tk: 90, mask: Mask{Window: 20}, rows: true, hval: 1.7},
	{name: "gaussPadHollow", kern: testGauss{}, b: 2, h: 1, tq: 66, tk: 66, mask: Mask{Hollow: true}, keyPad: true, hval: 1.2},
	{name: "epanOffset", kern: testEpan{}, b: 1, h: 2, tq: 5, tk: 70, mask: Mask{Causal: true, Offset: 65}, hval: 3},
	// More queries than keys: the queries from 22 on see none, rows 32–63 a whole block.
	{name: "expWindowPastKeys", kern: testExp{}, b: 1, h: 2, tq: 70, tk: 20, mask: Mask{Window: 3}, hval: 2},
	{name: "expWindowBeyondSequence", kern: testExp{}, b: 1, h: 1, tq: 70, tk: 70, mask: Mask{Window: 1000}, hval: 2},
	{name: "gaussCausalHollow", kern: testGauss{}, b: 1, h: 1, tq: 70, tk: 70, mask: Mask{Causal: true, Hollow: true}, hval: 1.5},
	{name: "epanCausal", kern: testEpan{}, b: 1, h: 1, tq: 70, tk: 70, mask: Mask{Causal: true}, rows: true, hval: 2.5},
	{name: "gaussHeadsCausalBias", kern: testGauss{}, b: 2, h: 3, tq: 40, tk: 40, mask: Mask{Causal: true}, perHead: true, biasM: 4, biasP: 3, hval: 1.3},
	{name: "expOffsetBias", kern: testExp{}, b: 1, h: 2, tq: 6, tk: 70, mask: Mask{Causal: true, Offset: 64}, biasM: 3, biasP: 2, hval: 2},
	{name: "laplaceCausalRowsBias", kern: testLaplace{}, b: 2, h: 2, tq: 70, tk: 70, mask: Mask{Causal: true}, rows: true, biasM: 3, biasP: 2, hval: 1.4},
	{name: "laplacePadHollowHeads", kern: testLaplace{}, b: 2, h: 2, tq: 40, tk: 40, mask: Mask{Hollow: true}, keyPad: true, perHead: true, hval: 2},
	{name: "uniformWindowBias", kern: testUniform{}, b: 1, h: 2, tq: 35, tk: 35, mask: Mask{Window: 6}, biasM: 3, biasP: 2, hval: 1},
	// Mixtures (kernel parameters θ): of a dot-product and a distance kernel, and of two
	// compact kernels, where some pairs lie outside one support and some outside both.
	{name: "mixExpGaussRowsBias", kern: testMix{testExp{}, testGauss{}}, b: 1, h: 2, tq: 70, tk: 70, mask: Mask{Causal: true}, rows: true, biasM: 3, biasP: 2, hval: 1.8},
	{name: "mixLaplaceEpanExpPadBias", kern: testMix{testLaplace{}, testEpan{}, testExp{}}, b: 2, h: 2, tq: 40, tk: 40, mask: Mask{Causal: true}, keyPad: true, perHead: true, biasM: 2, biasP: 2, hval: 2.5},
	{name: "mixCompactPad", kern: testMix{testEpan{}, testScaled{testEpan{}, 0.6}}, b: 2, h: 2, tq: 66, tk: 66, keyPad: true, perHead: true, hval: 2},
	// Two kernels linear in their terms, every key seen (rowsMix32's fused loops), and
	// the same with the query itself hidden.
	{name: "mixLaplaceExpCausal", kern: testMix{testLaplace{}, testExp{}}, b: 2, h: 2, tq: 50, tk: 50, mask: Mask{Causal: true}, hval: 1.6},
	{name: "mixExpLaplaceCausalHollowRows", kern: testMix{testExp{}, testLaplace{}}, b: 1, h: 2, tq: 45, tk: 45, mask: Mask{Causal: true, Hollow: true}, rows: true, hval: 1.9},
	// The same fused loops on KernelAttention's row blocks: a window, per-query and
	// per-head bandwidths, a decoding offset, and queries that see no key.
	{name: "mixExpLaplaceWindowRows", kern: testMix{testExp{}, testLaplace{}}, b: 1, h: 2, tq: 70, tk: 70, mask: Mask{Window: 20}, rows: true, hval: 1.7},
	{name: "mixLaplaceExpOffsetHeads", kern: testMix{testLaplace{}, testExp{}}, b: 2, h: 2, tq: 6, tk: 70, mask: Mask{Causal: true, Offset: 64}, perHead: true, hval: 2},
	{name: "mixExpLaplaceWindowPastKeys", kern: testMix{testExp{}, testLaplace{}}, b: 1, h: 1, tq: 70, tk: 20, mask: Mask{Window: 3}, hval: 2},
}

func (c tiledCase) tensors(seed uint64) (params, inputs map[string]*tensor.Dense) {
	rng := rand.New(rand.NewPCG(seed, 3))
	const d, dv = 3, 2
	n := c.b * c.h
	params = map[string]*tensor.Dense{
		"q": randTensor(rng, 1, n, c.tq, d),
		"k": randTensor(rng, 1, n, c.tk, d),
		"v": randTensor(rng, 1, n, c.tk, dv),
	}
	switch {
	case c.perHead:
		hv := make([]float64, c.h)
		for i := range hv {
			hv[i] = c.hval * (0.8 + 0.4*rng.Float64())
		}
		params["h"] = tensor.New(tensor.WithShape(c.h), tensor.WithBacking(hv))
	case c.rows:
		hv := make([]float64, n*c.tq)
		for i := range hv {
			hv[i] = c.hval * (0.8 + 0.4*rng.Float64())
		}
		params["h"] = tensor.New(tensor.WithShape(n, c.tq), tensor.WithBacking(hv))
	default:
		params["h"] = tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{c.hval}))
	}
	if c.biasM > 0 {
		params["bias"] = randTensor(rng, 0.5, c.biasP, 2*c.biasM+1)
	}
	if pk, ok := c.kern.(ParamPairKernel); ok {
		params["theta"] = randTensor(rng, 1, pk.PairParamCount())
	}
	inputs = map[string]*tensor.Dense{}
	if c.keyPad {
		km := make([]float64, c.b*c.tk)
		for i := range km {
			km[i] = 1
		}
		km[c.tk-1] = 0
		km[3] = 0
		if c.b > 1 {
			for j := range c.tk {
				km[c.tk+j] = 0
			}
		}
		inputs["km"] = tensor.New(tensor.WithShape(c.b, c.tk), tensor.WithBacking(km))
	}
	return params, inputs
}

// pairOp is TiledLocalMean or KernelAttention: two ops of one function.
type pairOp func(g *Graph, kern PairKernel, q, k, v *Node, opt TiledOptions) *Node

func (c tiledCase) build(g *Graph, p map[string]*Node) *Node {
	return c.buildWith((*Graph).TiledLocalMean)(g, p)
}

func (c tiledCase) buildInFeatures(g *Graph, p map[string]*Node) *Node {
	return c.buildInFeaturesWith((*Graph).TiledLocalMean)(g, p)
}

// buildWith returns the graph of op on the inputs [B·H, T, d].
func (c tiledCase) buildWith(op pairOp) func(g *Graph, p map[string]*Node) *Node {
	return func(g *Graph, p map[string]*Node) *Node {
		opt := TiledOptions{Bandwidth: p["h"], RelBias: p["bias"], KeyMask: p["km"], KernelParams: p["theta"], Heads: c.h, Mask: c.mask}
		return op(g, c.kern, p["q"], p["k"], p["v"], opt)
	}
}

// buildInFeaturesWith computes the same as buildWith on the [B, T, H·d] layout: the
// inputs' heads are merged into the features before the op and split again after it.
func (c tiledCase) buildInFeaturesWith(op pairOp) func(g *Graph, p map[string]*Node) *Node {
	return func(g *Graph, p map[string]*Node) *Node { return c.inFeatures(g, p, op) }
}

func (c tiledCase) inFeatures(g *Graph, p map[string]*Node, op pairOp) *Node {
	var m *Node
	return c.splitOutput(g, c.mergedOp(g, p, op, &m))
}

// mergedOp runs op on the inputs with their heads merged into the features, also
// setting *m to its output [B, Tq, H·dv].
func (c tiledCase) mergedOp(g *Graph, p map[string]*Node, op pairOp, m **Node) *Node {
	merge := func(x *Node) *Node {
		s := x.Shape()
		y := g.Transpose(g.Reshape(x, []int{c.b, c.h, s[1], s[2]}), 0, 2, 1, 3)
		return g.Reshape(y, []int{c.b, s[1], c.h * s[2]})
	}
	opt := TiledOptions{Bandwidth: p["h"], RelBias: p["bias"], KeyMask: p["km"], KernelParams: p["theta"], Heads: c.h, Mask: c.mask, HeadsInFeatures: true}
	*m = op(g, c.kern, merge(p["q"]), merge(p["k"]), merge(p["v"]), opt)
	return *m
}

// splitOutput maps the op's output [B, Tq, H·dv] to [B·H, Tq, dv].
func (c tiledCase) splitOutput(g *Graph, m *Node) *Node {
	if m == nil {
		return nil
	}
	y := g.Transpose(g.Reshape(m, []int{c.b, c.tq, c.h, 2}), 0, 2, 1, 3)
	return g.Reshape(y, []int{c.b * c.h, c.tq, 2})
}

// reference computes the tiled op's function with explicit scores and naiveLocalMean.
func (c tiledCase) reference(params, inputs map[string]*tensor.Dense) []float64 {
	q, k, v := params["q"].Float64s(), params["k"].Float64s(), params["v"].Float64s()
	hs := params["h"].Float64s()
	const d = 3
	n := c.b * c.h
	s := make([]float64, n*c.tq*c.tk)
	for p := range n {
		for t := range c.tq {
			h := hs[0]
			switch {
			case c.rows:
				h = hs[p*c.tq+t]
			case c.perHead:
				h = hs[p%c.h]
			}
			for j := range c.tk {
				qt, ks := q[(p*c.tq+t)*d:(p*c.tq+t+1)*d], k[(p*c.tk+j)*d:(p*c.tk+j+1)*d]
				var dot, d2 float64
				for i := range d {
					dot += qt[i] * ks[i]
					d2 += (qt[i] - ks[i]) * (qt[i] - ks[i])
				}
				out := []float64{0}
				if pk, ok := c.kern.(ParamPairKernel); ok {
					pk.PairScoresAt(params["theta"].Float64s(), out, []float64{dot}, []float64{d2}, h)
				} else {
					c.kern.PairScores(out, []float64{dot}, []float64{d2}, h)
				}
				if c.biasM > 0 {
					row := 0
					if c.biasP > 1 {
						row = p % c.h
					}
					r := min(max(j-t-c.mask.Offset, -c.biasM), c.biasM)
					out[0] += params["bias"].Float64s()[row*(2*c.biasM+1)+r+c.biasM]
				}
				s[(p*c.tq+t)*c.tk+j] = out[0]
			}
		}
	}
	var km []float64
	if inputs["km"] != nil {
		km = inputs["km"].Float64s()
	}
	return naiveLocalMean(lmDims{n: n, heads: c.h, tq: c.tq, tk: c.tk, dv: 2}, c.mask, s, v, km)
}

// TestTiledLocalMeanMatchesReference checks the tiled forward pass against explicit
// scores normalised by naiveLocalMean, in float64 and float32.
func TestTiledLocalMeanMatchesReference(t *testing.T) {
	for _, c := range tiledCases {
		params, inputs := c.tensors(1)
		want := c.reference(params, inputs)
		for _, dt := range []Dtype{Float64, Float32} {
			all := map[string]*tensor.Dense{}
			for n, x := range params {
				all[n] = x
			}
			for layout, build := range map[string]func(*Graph, map[string]*Node) *Node{"split": c.build, "features": c.buildInFeatures} {
				got := evalOp(t, dt, false, all, inputs, build)
				tol := 1e-12
				if dt == Float32 {
					tol = 2e-5
				}
				var worst float64
				for i := range want {
					worst = math.Max(worst, math.Abs(got[i]-want[i]))
				}
				if worst > tol || math.IsNaN(worst) {
					t.Errorf("%s %v %s: largest difference from the reference %g, want <= %g", c.name, dt, layout, worst, tol)
				}
			}
		}
	}
}

// TestTiledLocalMeanGradients gradient-checks the tiled op with respect to queries, keys,
// values, bandwidths and the relative-bias table.
func TestTiledLocalMeanGradients(t *testing.T) {
	for _, c := range tiledCases {
		params, inputs := c.tensors(2)
		checkOp(t, c.name, params, inputs, c.build, GradCheck{MaxPerTensor: 25, RTol: 1e-5, ATol: 1e-7})
		checkOp(t, c.name+"/features", params, inputs, c.buildInFeatures, GradCheck{MaxPerTensor: 10, RTol: 1e-5, ATol: 1e-7})
	}
}

// TestTiledLocalMeanEdgeRows checks LocalMean's rules: a query that sees no key gets 0
// and zero gradients, and a NaN score makes its query's output NaN.
func TestTiledLocalMeanEdgeRows(t *testing.T) {
	c := tiledCase{name: "allPadded", kern: testExp{}, b: 2, h: 1, tq: 3, tk: 4, keyPad: true, hval: 1}
	params, inputs := c.tensors(3)
	got := evalOp(t, Float64, false, params, inputs, c.build)
	for i, x := range got[3*2:] { // batch element 1 sees nothing
		if x != 0 {
			t.Fatalf("output %d of a query with no visible key = %g, want 0", 6+i, x)
		}
	}
	checkOp(t, c.name, params, inputs, c.build, GradCheck{})
	params["q"].Float64s()[0] = math.NaN()
	got = evalOp(t, Float64, false, params, inputs, c.build)
	if !math.IsNaN(got[0]) || math.IsNaN(got[2]) {
		t.Fatalf("NaN query: outputs %v, want NaN in row 0 only", got[:4])
	}
}
