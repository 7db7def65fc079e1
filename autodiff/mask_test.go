package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// naiveWeights is an independent reference for softmaxVisible: the weights of query t
// over tk keys, from the mask's rules written out key by key, in float64.
func naiveWeights(s, km []float64, m Mask, t int) []float64 {
	w := make([]float64, len(s))
	pos := t + m.Offset
	var vis []int
	for j := range s {
		if (!m.Causal || j <= pos) && (m.Window == 0 || abs(pos-j) < m.Window) &&
			(!m.Hollow || j != pos) && (km == nil || km[j] != 0) {
			vis = append(vis, j)
		}
	}
	mx := math.Inf(-1)
	for _, j := range vis {
		if math.IsNaN(s[j]) || math.IsInf(s[j], 1) {
			mx = math.NaN()
			break
		}
		mx = math.Max(mx, s[j])
	}
	switch {
	case math.IsNaN(mx):
		for _, j := range vis {
			w[j] = math.NaN()
		}
		return w
	case math.IsInf(mx, -1):
		return w
	}
	var sum float64
	for _, j := range vis {
		w[j] = math.Exp(s[j] - mx)
		sum += w[j]
	}
	for _, j := range vis {
		w[j] /= sum
	}
	return w
}

type visibleCase struct {
	name string
	s    []float64
	km   []float64
	mask Mask
	t    int
}

func visibleCases() []visibleCase {
	inf, nan := math.Inf(1), math.NaN()
	long := func(n int, f func(j int) float64) []float64 {
		s := make([]float64, n)
		for j := range s {
			s[j] = f(j)
		}
		return s
	}
	rng := rand.New(rand.NewPCG(41, 1))
	return []visibleCase{
		{name: "plain", s: []float64{0.5, -1, 2, 0.3}},
		{name: "large logits", s: []float64{1e4, 1e4 + 1, -1e4, 0}},
		{name: "large negative logits", s: []float64{-1e4, -1e4 - 1, -1e4 + 0.5}},
		{name: "-Inf scores", s: []float64{-inf, 1, -inf, 2, -inf}},
		{name: "all -Inf", s: []float64{-inf, -inf, -inf}},
		{name: "visible all -Inf", s: []float64{-inf, 5, -inf}, km: []float64{1, 0, 1}},
		{name: "fully masked by km", s: []float64{1, 2, 3}, km: []float64{0, 0, 0}},
		{name: "hollow T=1", s: []float64{3}, mask: Mask{Hollow: true}},
		{name: "hollow huge self", s: []float64{0.1, 1e4, -0.2}, mask: Mask{Hollow: true}, t: 1},
		{name: "causal first", s: []float64{0.7, 9, 9}, mask: Mask{Causal: true}},
		{name: "causal hollow first", s: []float64{0.7, 9, 9}, mask: Mask{Causal: true, Hollow: true}},
		{name: "window", s: []float64{5, 1, 2, 3, 4, 5}, mask: Mask{Window: 2}, t: 3},
		{name: "offset", s: []float64{1, 2, 3, 4, 5}, mask: Mask{Causal: true, Offset: 3}, t: 0},
		{name: "negative offset", s: []float64{1, 2, 3}, mask: Mask{Causal: true, Offset: -2}, t: 1},
		{name: "window past the keys", s: []float64{1, 2, 3}, mask: Mask{Window: 2, Offset: 4}, t: 1},
		{name: "NaN visible", s: []float64{1, nan, 2}},
		{name: "+Inf visible", s: []float64{1, inf, 2}},
		{name: "NaN hidden by km", s: []float64{1, nan, 2}, km: []float64{1, 0, 1}},
		{name: "+Inf hidden by hollow", s: []float64{1, inf, 2}, mask: Mask{Hollow: true}, t: 1},
		{name: "NaN past causal", s: []float64{1, 2, nan}, mask: Mask{Causal: true}, t: 1},
		// Rows long enough for the vector kernels, with their tails and special values
		// spread over every lane.
		{name: "long -Inf", s: long(37, func(j int) float64 {
			if j%3 == 0 {
				return -inf
			}
			return 3 * rng.NormFloat64()
		})},
		{name: "long window km", s: long(130, func(int) float64 { return 5 * rng.NormFloat64() }),
			km: long(130, func(j int) float64 { return float64(j % 5 % 2) }), mask: Mask{Window: 40, Hollow: true}, t: 70},
		{name: "long NaN in tail", s: long(43, func(j int) float64 {
			if j == 41 {
				return nan
			}
			return rng.NormFloat64()
		})},
	}
}

// TestSoftmaxVisible checks the shared masked normalisation against naiveWeights on
// every edge case, in float64 and float32, in place and into a separate row: exact
// zeros for hidden, −Inf and fully masked keys, NaN rows for NaN or +Inf visible scores,
// and nothing written outside [clo, chi).
func TestSoftmaxVisible(t *testing.T) {
	for _, c := range visibleCases() {
		want := naiveWeights(c.s, c.km, c.mask, c.t)
		tk := len(c.s)
		for _, span := range [][2]int{{0, tk}, {0, 0}} {
			clo, chi := span[0], span[1]
			if chi == 0 { // the query's own block range, as the ops use it
				clo, chi = keyRange(c.mask, c.t, c.t+1, tk)
				if chi <= clo {
					clo, chi = 0, 0
				}
			}
			for _, inPlace := range []bool{false, true} {
				name := fmt.Sprintf("%s [%d,%d) inPlace=%v", c.name, clo, chi, inPlace)
				check := func(dt string, got []float64, tol float64) {
					t.Helper()
					for j := range got {
						w := want[j]
						switch {
						case j < clo || j >= chi:
							if got[j] != 7 {
								t.Errorf("%s %s: w[%d] = %v written outside [%d, %d)", name, dt, j, got[j], clo, chi)
							}
						case math.IsNaN(w):
							if !math.IsNaN(got[j]) {
								t.Errorf("%s %s: w[%d] = %v, want NaN", name, dt, j, got[j])
							}
						case w == 0 && got[j] != 0, math.IsNaN(got[j]), math.Abs(got[j]-w) > tol:
							t.Errorf("%s %s: w[%d] = %v, want %v", name, dt, j, got[j], w)
						}
					}
				}
				check("float64", runVisible(t, name, c.s, c.km, c.mask, c.t, clo, chi, inPlace), 1e-15)
				s32, km32 := make([]float32, tk), []float32(nil)
				for j, v := range c.s {
					s32[j] = float32(v)
				}
				if c.km != nil {
					km32 = make([]float32, tk)
					for j, v := range c.km {
						km32[j] = float32(v)
					}
				}
				check("float32", runVisible(t, name, s32, km32, c.mask, c.t, clo, chi, inPlace), 1e-6)
			}
		}
	}
}

// runVisible runs softmaxVisible on a copy of the scores s and returns the weight row,
// 7 wherever it was left alone; with a separate weight row, the scores must not change.
func runVisible[T float](t *testing.T, name string, s, km []T, m Mask, q, clo, chi int, inPlace bool) []float64 {
	t.Helper()
	w := make([]T, len(s))
	for j := range w {
		w[j] = 7
	}
	src := append([]T(nil), s...)
	if inPlace {
		copy(w[clo:chi], s[clo:chi])
		src = w
	}
	softmaxVisible(src, w, km, m, q, clo, chi)
	if !inPlace {
		for j := range s {
			if math.Float64bits(float64(src[j])) != math.Float64bits(float64(s[j])) {
				t.Errorf("%s: score %d changed from %v to %v", name, j, s[j], src[j])
			}
		}
	}
	out := make([]float64, len(w))
	for j, v := range w {
		out[j] = float64(v)
	}
	return out
}

// maskEdgeCases are the edge cases both fused ops are checked on, each op through
// its own inputs but on the same scores: LocalMean takes the scores s [B, Tq, Tk]
// directly, Attention computes them as q·kᵀ with q = s and k the identity.
var maskEdgeCases = []struct {
	name   string
	tq, tk int
	mask   Mask
	keyPad bool    // batch element 0 loses its last key, element 1 every key
	scale  float64 // of the scores
}{
	{name: "fully masked row", tq: 3, tk: 4, keyPad: true, scale: 1},
	{name: "hollow T=1", tq: 1, tk: 1, mask: Mask{Hollow: true}, scale: 1},
	{name: "causal hollow", tq: 4, tk: 4, mask: Mask{Causal: true, Hollow: true}, scale: 1},
	{name: "window", tq: 5, tk: 5, mask: Mask{Window: 2}, scale: 1},
	{name: "window hollow keymask", tq: 5, tk: 5, mask: Mask{Window: 2, Hollow: true}, keyPad: true, scale: 1},
	{name: "offset", tq: 2, tk: 5, mask: Mask{Causal: true, Offset: 3}, scale: 1},
	{name: "negative offset", tq: 4, tk: 3, mask: Mask{Causal: true, Offset: -2}, scale: 1},
	{name: "window past the keys", tq: 3, tk: 3, mask: Mask{Window: 2, Offset: 3}, scale: 1},
	{name: "no query sees a key", tq: 3, tk: 2, mask: Mask{Causal: true, Offset: -5}, scale: 1},
	{name: "large logits", tq: 3, tk: 4, mask: Mask{Causal: true}, scale: 1e4},
}

// TestMaskEdgeCasesBothOps runs LocalMean and Attention on the same scores for every
// edge case: values against the naive local mean (float64 tight, float32 close, never
// NaN, fully masked rows exactly 0) and gradients by finite differences.
func TestMaskEdgeCasesBothOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 1))
	const b, dv = 2, 3
	for _, c := range maskEdgeCases {
		s := randTensor(rng, c.scale, b, c.tq, c.tk)
		v := randTensor(rng, 1, b, c.tk, dv)
		f32Round(s)
		f32Round(v)
		eye := make([]float64, b*c.tk*c.tk)
		for i := range b * c.tk {
			eye[i*c.tk+i%c.tk] = 1
		}
		inputs := map[string]*tensor.Dense{"eye": tensor.New(tensor.WithShape(b, c.tk, c.tk), tensor.WithBacking(eye))}
		var kmd []float64
		if c.keyPad {
			kmd = make([]float64, b*c.tk)
			for j := range c.tk - 1 {
				kmd[j] = 1
			}
			inputs["km"] = tensor.New(tensor.WithShape(b, c.tk), tensor.WithBacking(kmd))
		}
		d := lmDims{n: b, heads: 1, tq: c.tq, tk: c.tk, dv: dv}
		want := naiveLocalMean(d, c.mask, s.Data().([]float64), v.Data().([]float64), kmd)
		ops := map[string]func(g *Graph, p map[string]*Node) *Node{
			"LocalMean": func(g *Graph, p map[string]*Node) *Node { return g.LocalMean(p["s"], p["v"], p["km"], c.mask) },
			"Attention": func(g *Graph, p map[string]*Node) *Node {
				return g.Attention(p["s"], p["eye"], p["v"], p["km"], 1, 1, c.mask)
			},
		}
		for op, f := range ops {
			name := op + " " + c.name
			params := map[string]*tensor.Dense{"s": s, "v": v}
			got64 := evalOp(t, Float64, false, params, inputs, f)
			checkValues(t, name+" float64", got64, want, 1e-12, 1e-12)
			got32 := evalOp(t, Float32, false, params, inputs, f)
			checkValues(t, name+" float32", got32, got64, 1e-5, 1e-6)
			for i, w := range want {
				if w == 0 && (got64[i] != 0 || got32[i] != 0) {
					t.Errorf("%s: out[%d] = %v (float64), %v (float32), want exactly 0", name, i, got64[i], got32[i])
				}
			}
			if c.scale == 1 { // finite differences cannot follow logits of 1e4
				checkOp(t, name, map[string]*tensor.Dense{"s": s, "v": v}, inputs, f, GradCheck{ATol: 1e-7, RTol: 1e-5})
			}
		}
	}
}

// TestMaskNonFiniteScoresBothOps checks the rows that −Inf or NaN scores reach in both
// ops: a row whose visible scores are all −Inf gives 0 and zero gradient, never NaN; a
// NaN score makes its own row NaN and no other. Attention's scores are q·k with one
// feature: q = −Inf against positive keys is −Inf for every key.
func TestMaskNonFiniteScoresBothOps(t *testing.T) {
	const tq, tk, dv = 3, 4, 2
	rng := rand.New(rand.NewPCG(43, 1))
	for _, special := range []float64{math.Inf(-1), math.NaN()} {
		v := randTensor(rng, 1, 1, tk, dv)
		s := randTensor(rng, 1, 1, tq, tk)
		q := randTensor(rng, 1, 1, tq, 1)
		k := positive(rng, 1, tk, 1)
		for j := range tk {
			s.Data().([]float64)[tk+j] = special // row 1
		}
		q.Data().([]float64)[1] = special
		for _, dt := range []Dtype{Float64, Float32} {
			for _, o := range []struct {
				op     string
				params map[string]*tensor.Dense
				f      func(g *Graph, p map[string]*Node) *Node
			}{
				{"LocalMean", map[string]*tensor.Dense{"s": s, "v": v}, func(g *Graph, p map[string]*Node) *Node {
					return g.LocalMean(p["s"], p["v"], nil, Mask{})
				}},
				{"Attention", map[string]*tensor.Dense{"q": q, "k": k, "v": v}, func(g *Graph, p map[string]*Node) *Node {
					return g.Attention(p["q"], p["k"], p["v"], nil, 1, 1, Mask{})
				}},
			} {
				name := fmt.Sprintf("%s %v scores %v", o.op, special, dt)
				m, byName := newTestModel(t, dt, o.params, nil, o.f, 1)
				res, err := m.Run(nil, RunMode{Backward: true})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				out := floats(res.Values["out"])
				for i, o := range out {
					row1 := i/dv == 1
					switch {
					case row1 && math.IsNaN(special) && !math.IsNaN(o):
						t.Errorf("%s: out[%d] = %v, want NaN", name, i, o)
					case row1 && math.IsInf(special, -1) && o != 0:
						t.Errorf("%s: out[%d] = %v, want 0", name, i, o)
					case !row1 && math.IsNaN(o):
						t.Errorf("%s: out[%d] = NaN outside the NaN row", name, i)
					}
				}
				if !math.IsInf(special, -1) {
					continue
				}
				// k's gradient Σ_t ds_t·q_t meets 0·(−Inf) in row 1: IEEE's NaN, which no
				// normalisation can avoid.
				delete(byName, "k")
				for n, p := range byName {
					for i := range p.Size() {
						if g := p.GradAt(i); math.IsNaN(g) || (n == "s" && i/tk == 1 || n == "q" && i == 1) && g != 0 {
							t.Errorf("%s: gradient of %s[%d] = %v", name, n, i, g)
						}
					}
				}
			}
		}
	}
}
