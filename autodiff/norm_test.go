package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func normParams(rng *rand.Rand, shape []int, bias bool) map[string]*tensor.Dense {
	d := shape[len(shape)-1]
	p := map[string]*tensor.Dense{
		"x": randTensor(rng, 2, shape...),
		"w": randTensor(rng, 0.5, d),
	}
	for i := range p["w"].Data().([]float64) {
		p["w"].Data().([]float64)[i] += 1
	}
	if bias {
		p["b"] = randTensor(rng, 1, d)
	}
	return p
}

var normShapes = [][]int{{1, 1}, {5, 1}, {1, 6}, {3, 7}, {2, 3, 4}, {8}}

func TestLayerNormGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, bias := range []bool{true, false} {
		for _, s := range normShapes {
			checkOp(t, "LayerNorm", normParams(rng, s, bias), nil, func(g *Graph, p map[string]*Node) *Node {
				return g.LayerNorm(p["x"], p["w"], p["b"], 1e-5)
			}, tol)
		}
	}
	// Large enough for the parallel row and column paths (sampled elements only).
	big := GradCheck{ATol: 1e-7, RTol: 1e-5, MaxPerTensor: 12}
	checkOp(t, "LayerNorm big", normParams(rng, []int{300, 64}, true), nil, func(g *Graph, p map[string]*Node) *Node {
		return g.LayerNorm(p["x"], p["w"], p["b"], 1e-5)
	}, big)
	checkOp(t, "RMSNorm big", normParams(rng, []int{300, 64}, false), nil, func(g *Graph, p map[string]*Node) *Node {
		return g.RMSNorm(p["x"], p["w"], 1e-5)
	}, big)
	// A nearly constant row: the variance is far below eps.
	p := normParams(rng, []int{2, 4}, true)
	x := p["x"].Data().([]float64)
	for i := range x {
		x[i] = 1 + 1e-4*float64(i%4)
	}
	checkOp(t, "LayerNorm tiny variance", p, nil, func(g *Graph, p map[string]*Node) *Node {
		return g.LayerNorm(p["x"], p["w"], p["b"], 1e-5)
	}, tol)
}

func TestRMSNormGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range normShapes {
		checkOp(t, "RMSNorm", normParams(rng, s, false), nil, func(g *Graph, p map[string]*Node) *Node {
			return g.RMSNorm(p["x"], p["w"], 1e-5)
		}, tol)
	}
}

// naiveLayerNorm is a direct transcription of the definition.
func naiveLayerNorm(x, w, b []float64, d int, eps float64, rms bool) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/d; r++ {
		row := x[r*d : (r+1)*d]
		mean, ms := 0.0, 0.0
		for _, v := range row {
			mean += v / float64(d)
			ms += v * v / float64(d)
		}
		for j, v := range row {
			var y float64
			if rms {
				y = v / math.Sqrt(ms+eps) * w[j]
			} else {
				variance := 0.0
				for _, u := range row {
					variance += (u - mean) * (u - mean) / float64(d)
				}
				y = (v - mean) / math.Sqrt(variance+eps) * w[j]
			}
			if b != nil {
				y += b[j]
			}
			out[r*d+j] = y
		}
	}
	return out
}

func TestNormValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range [][]int{{4, 5}, {5, 1}, {2, 3, 16}, {300, 64}} {
		d := s[len(s)-1]
		for _, bias := range []bool{true, false} {
			p := normParams(rng, s, bias)
			for _, v := range p {
				f32Round(v)
			}
			var b []float64
			if bias {
				b = p["b"].Data().([]float64)
			}
			x, w := p["x"].Data().([]float64), p["w"].Data().([]float64)
			checkBothDtypes(t, "LayerNorm", p, nil, func(g *Graph, p map[string]*Node) *Node {
				return g.LayerNorm(p["x"], p["w"], p["b"], 1e-5)
			}, naiveLayerNorm(x, w, b, d, 1e-5, false))
			if !bias {
				checkBothDtypes(t, "RMSNorm", p, nil, func(g *Graph, p map[string]*Node) *Node {
					return g.RMSNorm(p["x"], p["w"], 1e-6)
				}, naiveLayerNorm(x, w, nil, d, 1e-6, true))
			}
		}
	}
	// Hand-computed: row [1, 3] has mean 2, variance 1 → [−1, 1]/sqrt(1+eps).
	p := map[string]*tensor.Dense{"x": denseOf([]int{1, 2}, 1, 3), "w": denseOf([]int{2}, 2, 1), "b": denseOf([]int{2}, 0.5, 0)}
	r := 1 / math.Sqrt(1+1e-5)
	got := evalOp(t, Float64, false, p, nil, func(g *Graph, p map[string]*Node) *Node {
		return g.LayerNorm(p["x"], p["w"], p["b"], 1e-5)
	})
	checkValues(t, "LayerNorm hand", got, []float64{-2*r + 0.5, r}, 1e-12, 0)
	// RMS of [3, 4] is sqrt(12.5).
	got = evalOp(t, Float64, false, p, nil, func(g *Graph, p map[string]*Node) *Node {
		x := g.AddConst(p["x"], 0) // [1, 3]
		return g.RMSNorm(x, p["w"], 1e-5)
	})
	q := 1 / math.Sqrt(5+1e-5)
	checkValues(t, "RMSNorm hand", got, []float64{2 * q, 3 * q}, 1e-12, 0)
}

func TestNormSize1NoNaN(t *testing.T) {
	// d = 1: the variance is 0, so LayerNorm gives the bias and a zero gradient.
	p := map[string]*tensor.Dense{"x": denseOf([]int{3, 1}, 5, -2, 1e4), "w": denseOf([]int{1}, 2), "b": denseOf([]int{1}, 0.25)}
	for _, dt := range []Dtype{Float32, Float64} {
		m, params := newTestModel(t, dt, p, nil, func(g *Graph, p map[string]*Node) *Node {
			return g.LayerNorm(p["x"], p["w"], p["b"], 1e-5)
		}, 1)
		res, err := m.ForwardBackward(nil)
		if err != nil {
			t.Fatal(err)
		}
		checkValues(t, "LayerNorm d=1", floats(res.Values["out"]), []float64{0.25, 0.25, 0.25}, 0, 0)
		for _, name := range []string{"x", "w"} {
			for i := 0; i < params[name].Size(); i++ {
				if g := params[name].GradAt(i); g != 0 {
					t.Errorf("%v: grad %s[%d] = %g, want 0", dt, name, i, g)
				}
			}
		}
		if g := params["b"].GradAt(0); math.IsNaN(g) {
			t.Errorf("%v: bias grad NaN", dt)
		}
	}
}

func TestNormShapeErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     func(g *Graph) *Node
		parts []string
	}{
		{"weight", func(g *Graph) *Node {
			return g.LayerNorm(g.ConstTensor([]int{2, 3}, make([]float64, 6)), g.ConstTensor([]int{2}, make([]float64, 2)), nil, 1e-5)
		}, []string{"LayerNorm", "weight", "(2)", "(2, 3)"}},
		{"bias", func(g *Graph) *Node {
			return g.LayerNorm(g.ConstTensor([]int{2, 3}, make([]float64, 6)), g.ConstTensor([]int{3}, make([]float64, 3)), g.ConstTensor([]int{4}, make([]float64, 4)), 1e-5)
		}, []string{"LayerNorm", "bias"}},
		{"eps", func(g *Graph) *Node {
			return g.LayerNorm(g.ConstTensor([]int{2, 3}, make([]float64, 6)), g.ConstTensor([]int{3}, make([]float64, 3)), nil, 0)
		}, []string{"LayerNorm", "eps"}},
		{"rms weight 2d", func(g *Graph) *Node {
			return g.RMSNorm(g.ConstTensor([]int{2, 3}, make([]float64, 6)), g.ConstTensor([]int{1, 3}, make([]float64, 3)), 1e-5)
		}, []string{"RMSNorm", "weight"}},
		{"rms scalar", func(g *Graph) *Node {
			return g.RMSNorm(g.Const(1), g.ConstTensor([]int{1}, []float64{1}), 1e-5)
		}, []string{"RMSNorm", "scalar"}},
		{"rms nil", func(g *Graph) *Node {
			return g.RMSNorm(nil, g.ConstTensor([]int{1}, []float64{1}), 1e-5)
		}, []string{"RMSNorm", "nil"}},
	} {
		wantErrContains(t, tc.name, buildErr(t, tc.name, tc.f), tc.parts...)
	}
}

func TestNormHashAttrs(t *testing.T) {
	// Different eps or bias must give different nodes.
	g := NewGraph(Float64, false, 1)
	x := g.addInput("x", Float64, tensor.Shape{2, 3})
	w := g.addInput("w", Float64, tensor.Shape{3})
	a, b := g.LayerNorm(x, w, nil, 1e-5), g.LayerNorm(x, w, nil, 1e-3)
	c, d := g.RMSNorm(x, w, 1e-5), g.RMSNorm(x, w, 1e-3)
	if g.Err() != nil {
		t.Fatal(g.Err())
	}
	if a.n == b.n || c.n == d.n {
		t.Error("norms with different eps were merged")
	}
}

// TestLayerNormPartialSums compares the interleaved row sums of LayerNorm's forward with
// plain sequential sums, float32 rows of every length up to 70: they
// differ only by float64 round-off (max relative difference stated by the test log).
func TestLayerNormPartialSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var worst float64
	rel := func(got, want float64) float64 { return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300) }
	for n := 0; n <= 70; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() + 3)
		}
		var s, ss float64
		for _, v := range x {
			s += float64(v)
		}
		mu := s / math.Max(float64(n), 1)
		for _, v := range x {
			ss += (float64(v) - mu) * (float64(v) - mu)
		}
		for _, d := range []float64{rel(rowSum(x), s), rel(rowSqDev(x, mu), ss)} {
			if n > 0 && !(d <= 1e-13) {
				t.Fatalf("n=%d: relative difference %g from the sequential sums", n, d)
			}
			if n > 0 {
				worst = max(worst, d)
			}
		}
		if n == 0 && (rowSum(x) != 0 || rowSqDev(x, 0) != 0) {
			t.Fatalf("empty row: sums not zero")
		}
	}
	t.Logf("max relative difference from sequential sums: %.2g", worst)
}

// TestLayerNormFloat32 compares the float32 LayerNorm (vector row kernels, weight and
// bias gradients from one shared pass) with float64 on the same float32-representable
// inputs: loss and every gradient within float32 round-off (max difference logged).
// runGrads runs each model twice, so the second backward pass reads the sums cached by
// the first call of the pass, not stale ones.
func TestLayerNormFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	ln := func(g *Graph, p map[string]*Node) *Node { return g.LayerNorm(p["x"], p["w"], p["b"], 1e-5) }
	var worst float64
	for _, s := range [][]int{{300, 64}, {7, 67}, {2, 5, 16}, {3, 3}} {
		for _, bias := range []bool{true, false} {
			p := normParams(rng, s, bias)
			for _, v := range p {
				f32Round(v)
			}
			l64, g64 := runGrads(t, Float64, p, ln)
			l32, g32 := runGrads(t, Float32, p, ln)
			if d := math.Abs(l32 - l64); d > 1e-6*(1+math.Abs(l64)) {
				t.Errorf("%v bias=%v: loss float32 %v, float64 %v", s, bias, l32, l64)
			}
			for n, want := range g64 {
				var scale float64
				for _, v := range want {
					scale = max(scale, math.Abs(v))
				}
				for i, v := range g32[n] {
					d := math.Abs(v-want[i]) / scale
					worst = max(worst, d)
					if !(d <= 1e-6) {
						t.Fatalf("%v bias=%v: float32 gradient of %s[%d] = %v, float64 %v", s, bias, n, i, v, want[i])
					}
				}
			}
		}
	}
	t.Logf("max |float32 − float64| gradient / max |gradient|: %.3g", worst)
}

// TestLayerNormBiasGradAlone checks the bias gradient when the weight is not
// differentiated (an input, not a parameter): the bias's backward call is then the only
// one of the shared pass.
func TestLayerNormBiasGradAlone(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	p := normParams(rng, []int{6, 20}, true)
	in := map[string]*tensor.Dense{"w": p["w"]}
	delete(p, "w")
	checkOp(t, "LayerNorm weight input", p, in, func(g *Graph, p map[string]*Node) *Node {
		return g.LayerNorm(p["x"], p["w"], p["b"], 1e-5)
	}, tol)
}
