package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
)

// naiveLocalMean is an independent reference: it builds the full visibility matrix and
// normalises with plain loops.
func naiveLocalMean(d lmDims, mask Mask, s, v, km []float64) []float64 {
	out := make([]float64, d.n*d.tq*d.dv)
	for p := 0; p < d.n; p++ {
		b := p / d.heads
		for t := 0; t < d.tq; t++ {
			pos := t + mask.Offset
			ws := make([]float64, d.tk)
			total := 0.0
			mx := math.Inf(-1)
			for j := 0; j < d.tk; j++ {
				ok := (!mask.Causal || j <= pos) && (mask.Window == 0 || abs(pos-j) < mask.Window) &&
					(!mask.Hollow || j != pos) && (km == nil || km[b*d.tk+j] != 0)
				if ok {
					ws[j] = 1
					mx = math.Max(mx, s[(p*d.tq+t)*d.tk+j])
				}
			}
			if math.IsInf(mx, -1) {
				continue
			}
			for j := range ws {
				if ws[j] != 0 {
					ws[j] = math.Exp(s[(p*d.tq+t)*d.tk+j] - mx)
					total += ws[j]
				}
			}
			for j := range ws {
				for c := 0; c < d.dv; c++ {
					out[(p*d.tq+t)*d.dv+c] += ws[j] / total * v[(p*d.tk+j)*d.dv+c]
				}
			}
		}
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

type lmCase struct {
	name   string
	scores []int
	dv     int
	mask   Mask
	keyPad bool // mask the last key of batch element 0 and all keys of element 1 (if any)
	scale  float64
	negInf bool // put −Inf scores (a compact kernel's outside) in some entries
}

var lmCases = []lmCase{
	{name: "3d", scores: []int{2, 3, 4}, dv: 2, scale: 1},
	{name: "4d", scores: []int{2, 2, 3, 3}, dv: 3, scale: 1},
	{name: "causal", scores: []int{1, 2, 4, 4}, dv: 2, mask: Mask{Causal: true}, scale: 1},
	{name: "window", scores: []int{1, 1, 5, 5}, dv: 2, mask: Mask{Window: 2}, scale: 1},
	{name: "hollow", scores: []int{1, 4, 4}, dv: 2, mask: Mask{Hollow: true}, scale: 1},
	{name: "causalHollow", scores: []int{1, 3, 3}, dv: 1, mask: Mask{Causal: true, Hollow: true}, scale: 1},
	{name: "offset", scores: []int{1, 2, 5}, dv: 2, mask: Mask{Causal: true, Offset: 3}, scale: 1},
	{name: "keyPadding", scores: []int{2, 2, 3, 3}, dv: 2, keyPad: true, scale: 1},
	{name: "size1", scores: []int{1, 1, 1, 1}, dv: 1, scale: 1},
	{name: "large", scores: []int{1, 3, 4}, dv: 2, scale: 1e4},
	{name: "negInf", scores: []int{1, 3, 4}, dv: 2, negInf: true, scale: 1},
}

func (c lmCase) tensors(rng *rand.Rand) (s, v, km *tensor.Dense, d lmDims) {
	s = randTensor(rng, c.scale, c.scores...)
	vshape := append([]int(nil), c.scores...)
	vshape[len(vshape)-2] = c.scores[len(c.scores)-1]
	vshape[len(vshape)-1] = c.dv
	v = randTensor(rng, 1, vshape...)
	d = dimsOf(s.Shape(), v.Shape())
	if c.negInf {
		sd := s.Data().([]float64)
		for i := range sd {
			if i%3 == 0 {
				sd[i] = math.Inf(-1)
			}
		}
		// One row fully outside the support.
		for j := 0; j < d.tk; j++ {
			sd[d.tk+j] = math.Inf(-1)
		}
	}
	if c.keyPad {
		b := c.scores[0]
		m := make([]float64, b*d.tk)
		for i := range m {
			m[i] = 1
		}
		m[d.tk-1] = 0
		if b > 1 {
			for j := 0; j < d.tk; j++ {
				m[d.tk+j] = 0
			}
		}
		km = tensor.New(tensor.WithShape(b, d.tk), tensor.WithBacking(m))
	}
	return s, v, km, d
}

func TestLocalMeanMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range lmCases {
		for _, dt := range []Dtype{Float64, Float32} {
			s, v, km, d := c.tensors(rng)
			var kmd []float64
			if km != nil {
				kmd = km.Data().([]float64)
			}
			want := naiveLocalMean(d, c.mask, s.Data().([]float64), v.Data().([]float64), kmd)
			ps, _ := NewParams(dt, 0)
			inputs := map[string]*tensor.Dense{"s": convert(s, dt), "v": convert(v, dt)}
			if km != nil {
				inputs["km"] = convert(km, dt)
			}
			m := NewModel(ps, func(g *Graph) (Outputs, error) {
				var kmn *Node
				if g.HasInput("km") {
					kmn = g.Input("km")
				}
				return Outputs{Values: map[string]*Node{"m": g.LocalMean(g.Input("s"), g.Input("v"), kmn, c.mask)}}, g.Err()
			}, 0)
			res, err := m.Forward(inputs)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			got := res.Values["m"]
			tol := 1e-12
			if dt == Float32 {
				tol = 1e-5
			}
			for i, w := range want {
				if g := at(got, i); math.IsNaN(g) || math.Abs(g-w) > tol*math.Max(1, math.Abs(w)) {
					t.Fatalf("%s %v: m[%d] = %g, want %g", c.name, dt, i, g, w)
				}
			}
		}
	}
}

func convert(t *tensor.Dense, dt Dtype) *tensor.Dense {
	src := t.Data().([]float64)
	if dt == Float64 {
		return tensor.New(tensor.WithShape(t.Shape()...), tensor.WithBacking(append([]float64(nil), src...)))
	}
	f := make([]float32, len(src))
	for i, v := range src {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(t.Shape()...), tensor.WithBacking(f))
}

func TestLocalMeanGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range lmCases {
		s, v, km, _ := c.tensors(rng)
		in := map[string]*tensor.Dense{}
		if km != nil {
			in["km"] = km
		}
		checkOp(t, c.name, map[string]*tensor.Dense{"s": s, "v": v}, in, func(g *Graph, p map[string]*Node) *Node {
			return g.LocalMean(p["s"], p["v"], p["km"], c.mask)
		}, GradCheck{ATol: 1e-7, RTol: 1e-5})
	}
}

// The self-local mean (values = the points themselves, through both arguments) checks the
// fused op inside a larger graph where one node feeds scores and values.
func TestLocalMeanSelfGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := randTensor(rng, 1, 2, 5, 3)
	checkOp(t, "self", map[string]*tensor.Dense{"x": x}, nil, func(g *Graph, p map[string]*Node) *Node {
		s := g.Scale(g.BatchedMatMul(p["x"], p["x"], false, true), 0.5)
		return g.LocalMean(s, p["x"], nil, Mask{Hollow: true})
	}, GradCheck{})
}

func TestLocalMeanShapeErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s, v  []int
		km    []int
		mask  Mask
		match string
	}{
		{"keys", []int{2, 3, 4}, []int{2, 5, 2}, nil, Mask{}, "4 keys"},
		{"lead", []int{2, 3, 4}, []int{3, 4, 2}, nil, Mask{}, "leading"},
		{"dims", []int{3, 4}, []int{4, 2}, nil, Mask{}, "want [N,Tq,Tk]"},
		{"keymask", []int{2, 3, 4}, []int{2, 4, 2}, []int{2, 3}, Mask{}, "key mask"},
		{"window", []int{2, 3, 4}, []int{2, 4, 2}, nil, Mask{Window: -1}, "negative window"},
	} {
		g := NewGraph(Float64, false, 0)
		s := g.addInput("s", Float64, tc.s)
		v := g.addInput("v", Float64, tc.v)
		var km *Node
		if tc.km != nil {
			km = g.addInput("km", Float64, tc.km)
		}
		if out := g.LocalMean(s, v, km, tc.mask); out != nil || g.Err() == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		if !contains(g.Err().Error(), tc.match) {
			t.Errorf("%s: error %q does not mention %q", tc.name, g.Err(), tc.match)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestLocalMeanBlocks runs the blocked kernels on problems several row blocks long, in
// float64 against the naive reference and in float32 (sgemm and vectorised exp) against
// float64, forward and both gradients.
func TestLocalMeanBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		name   string
		n, h   int
		tq, tk int
		dv     int
		mask   Mask
		keyPad bool
		negInf bool
	}{
		{name: "full", n: 2, h: 1, tq: 70, tk: 45, dv: 5},
		{name: "causal", n: 2, h: 2, tq: 77, tk: 77, dv: 16, mask: Mask{Causal: true}},
		{name: "causalHollowPad", n: 2, h: 3, tq: 40, tk: 40, dv: 3, mask: Mask{Causal: true, Hollow: true}, keyPad: true},
		{name: "window", n: 1, h: 2, tq: 90, tk: 90, dv: 7, mask: Mask{Window: 9}},
		{name: "windowOffset", n: 1, h: 1, tq: 50, tk: 120, dv: 4, mask: Mask{Causal: true, Window: 20, Offset: 70}},
		{name: "negOffset", n: 1, h: 1, tq: 70, tk: 40, dv: 2, mask: Mask{Causal: true, Offset: -35}},
		{name: "negInf", n: 2, h: 2, tq: 66, tk: 66, dv: 8, mask: Mask{Causal: true}, negInf: true},
	} {
		d := lmDims{n: c.n * c.h, heads: c.h, tq: c.tq, tk: c.tk, dv: c.dv}
		s := make([]float64, d.n*d.tq*d.tk)
		v := make([]float64, d.n*d.tk*d.dv)
		dm := make([]float64, d.n*d.tq*d.dv)
		for i := range s {
			s[i] = 3 * rng.NormFloat64()
			if c.negInf && rng.IntN(3) == 0 {
				s[i] = math.Inf(-1)
			}
		}
		if c.negInf { // one row entirely outside the support
			for j := 0; j < d.tk; j++ {
				s[5*d.tk+j] = math.Inf(-1)
			}
		}
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		for i := range dm {
			dm[i] = rng.NormFloat64()
		}
		var km []float64
		if c.keyPad {
			km = make([]float64, c.n*d.tk)
			for i := range km {
				km[i] = 1
			}
			km[3], km[d.tk-1] = 0, 0
			for j := 0; j < d.tk; j++ {
				km[d.tk+j] = 0 // batch element 1 sees nothing
			}
		}
		want := naiveLocalMean(d, c.mask, s, v, km)
		w64 := make([]float64, len(s))
		m64 := make([]float64, len(want))
		localMeanForward(d, c.mask, gemm.Dgemm, s, v, km, w64, m64)
		for i, w := range want {
			if math.Abs(m64[i]-w) > 1e-12*max(1, math.Abs(w)) {
				t.Fatalf("%s float64: m[%d] = %g, want %g", c.name, i, m64[i], w)
			}
		}
		ds64, dv64 := make([]float64, len(s)), make([]float64, len(v))
		localMeanGradScores(d, c.mask, gemm.Dgemm, w64, v, dm, ds64)
		localMeanGradValues(d, c.mask, gemm.Dgemm, w64, dm, dv64)

		f32 := func(x []float64) []float32 {
			y := make([]float32, len(x))
			for i, e := range x {
				y[i] = float32(e)
				if i%7 == 0 {
					y[i] = float32(math.NaN()) // outputs must be written in full
				}
			}
			return y
		}
		in32 := func(x []float64) []float32 {
			y := make([]float32, len(x))
			for i, e := range x {
				y[i] = float32(e)
			}
			return y
		}
		var km32 []float32
		if km != nil {
			km32 = in32(km)
		}
		s32, v32, dm32 := in32(s), in32(v), in32(dm)
		w32, m32 := make([]float32, len(s)), f32(m64)
		localMeanForward(d, c.mask, gemm.Sgemm, s32, v32, km32, w32, m32)
		ds32, dv32 := f32(ds64), f32(dv64)
		localMeanGradScores(d, c.mask, gemm.Sgemm, w32, v32, dm32, ds32)
		localMeanGradValues(d, c.mask, gemm.Sgemm, w32, dm32, dv32)
		for _, r := range []struct {
			what      string
			got       []float32
			want      []float64
			exactZero bool
		}{{"m", m32, m64, false}, {"ds", ds32, ds64, true}, {"dv", dv32, dv64, false}} {
			for i, w := range r.want {
				g := float64(r.got[i])
				if math.IsNaN(g) || math.Abs(g-w) > 2e-5*max(1, math.Abs(w)) || r.exactZero && w == 0 && g != 0 {
					t.Fatalf("%s float32: %s[%d] = %g, want %g", c.name, r.what, i, g, w)
				}
			}
		}
	}
}
