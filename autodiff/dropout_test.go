package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func dropoutOut(t *testing.T, dt Dtype, x *tensor.Dense, p float64, seed uint64) []float64 {
	t.Helper()
	m, _ := newTestModel(t, dt, map[string]*tensor.Dense{"x": x}, nil, func(g *Graph, n map[string]*Node) *Node {
		return g.Dropout(n["x"], p)
	}, seed)
	res, err := m.Run(nil, RunMode{Train: true})
	if err != nil {
		t.Fatal(err)
	}
	return floats(res.Values["out"])
}

func TestDropoutSeeded(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	x := f32Round(positive(rng, 40, 50))
	a, b := dropoutOut(t, Float64, x, 0.4, 7), dropoutOut(t, Float64, x, 0.4, 7)
	checkValues(t, "same seed", a, b, 0, 0)
	c := dropoutOut(t, Float64, x, 0.4, 8)
	same := 0
	for i := range a {
		if (a[i] == 0) == (c[i] == 0) {
			same++
		}
	}
	if same == len(a) {
		t.Error("different seeds gave the same mask")
	}
	// float32 draws the same mask and scales the same way.
	checkValues(t, "float32 vs float64", dropoutOut(t, Float32, x, 0.4, 7), a, 1e-6, 0)
	// Restoring the generator state replays the mask.
	m, _ := newTestModel(t, Float64, map[string]*tensor.Dense{"x": x}, nil, func(g *Graph, n map[string]*Node) *Node {
		return g.Dropout(n["x"], 0.4)
	}, 7)
	st, _ := m.RNGState()
	r1, _ := m.Run(nil, RunMode{Train: true})
	first := floats(r1.Values["out"])
	r2, _ := m.Run(nil, RunMode{Train: true})
	if second := floats(r2.Values["out"]); equalFloats(first, second) {
		t.Error("two runs drew the same mask")
	}
	_ = m.SetRNGState(st)
	r3, _ := m.Run(nil, RunMode{Train: true})
	checkValues(t, "restored state", floats(r3.Values["out"]), first, 0, 0)
}

func equalFloats(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestDropoutEvalIdentity(t *testing.T) {
	for _, train := range []bool{false, true} {
		g := NewGraph(Float64, train, 1)
		x := g.addInput("x", Float64, tensor.Shape{3, 4})
		if train {
			if y := g.Dropout(x, 0); y != x {
				t.Error("Dropout(p=0) in training is not x itself")
			}
			continue
		}
		if y := g.Dropout(x, 0.5); y != x {
			t.Error("Dropout in eval mode is not x itself")
		}
	}
	rng := rand.New(rand.NewPCG(19, 20))
	x := randTensor(rng, 1, 5, 6)
	got := evalOp(t, Float64, false, map[string]*tensor.Dense{"x": x}, nil, func(g *Graph, p map[string]*Node) *Node {
		return g.Dropout(p["x"], 0.9)
	})
	checkValues(t, "eval", got, x.Data().([]float64), 0, 0)
}

func TestDropoutStatistics(t *testing.T) {
	const n = 200000
	const p = 0.3
	rng := rand.New(rand.NewPCG(21, 22))
	x := positive(rng, 400, n/400)
	out := dropoutOut(t, Float32, x, p, 5)
	var sumIn, sumOut float64
	zeros := 0
	for i, v := range out {
		sumIn += x.Data().([]float64)[i]
		sumOut += v
		if v == 0 {
			zeros++
		} else if want := x.Data().([]float64)[i] / (1 - p); math.Abs(v-want) > 1e-6*want {
			t.Fatalf("kept element %d = %g, want x/(1−p) = %g", i, v, want)
		}
	}
	if frac := float64(zeros) / n; math.Abs(frac-p) > 0.005 { // σ ≈ 0.001
		t.Errorf("zeroed fraction %g, want ≈ %g", frac, p)
	}
	if r := sumOut / sumIn; math.Abs(r-1) > 0.01 { // σ ≈ 0.002
		t.Errorf("mean out / mean in = %g, want ≈ 1", r)
	}
}

func TestDropoutGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, s := range [][]int{{1, 1}, {5, 1}, {4, 6}, {2, 3, 4}} {
		for _, p := range []float64{0.2, 0.5} {
			checkOp(t, "Dropout", map[string]*tensor.Dense{"x": randTensor(rng, 1, s...), "w": randTensor(rng, 1, s...)}, nil,
				func(g *Graph, n map[string]*Node) *Node {
					// Two dropouts, one on a product, so that the masks must be replayed exactly.
					return g.Add(g.Dropout(g.Mul(n["x"], n["w"]), p), g.Dropout(n["x"], p))
				}, GradCheck{ATol: 1e-7, RTol: 1e-5, Train: true})
		}
	}
	// The gradient is mask/(1−p): with loss = Σ dropout(x), each kept element gets 1/(1−p).
	ps, _ := NewParams(Float64, 1)
	w, _ := ps.Root().New("x", []int{1000}, Ones())
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		y := g.Dropout(g.Param(w), 0.2)
		return Outputs{Loss: g.Sum(y), Values: map[string]*Node{"y": y}}, g.Err()
	}, 3)
	res, err := m.ForwardBackward(nil)
	if err != nil {
		t.Fatal(err)
	}
	y := floats(res.Values["y"])
	for i, gv := range w.GradFloat64s() {
		want := 0.0
		if y[i] != 0 {
			want = 1.25
		}
		if !(math.Abs(gv-want) <= 1e-12) {
			t.Fatalf("grad[%d] = %g, want %g", i, gv, want)
		}
	}
}

func TestDropoutTwiceOnSameInput(t *testing.T) {
	ps, _ := NewParams(Float64, 1)
	w, _ := ps.Root().New("x", []int{20, 20}, Ones())
	var ids [2]*Node
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		x := g.Param(w)
		a, b := g.Dropout(x, 0.5), g.Dropout(x, 0.5)
		ids = [2]*Node{a, b}
		return Outputs{Values: map[string]*Node{"a": a, "b": b}}, g.Err()
	}, 9)
	res, err := m.Run(nil, RunMode{Train: true})
	if err != nil {
		t.Fatal(err)
	}
	if ids[0].n == ids[1].n {
		t.Fatal("two Dropout calls on the same input were merged into one node")
	}
	if equalFloats(floats(res.Values["a"]), floats(res.Values["b"])) {
		t.Error("two Dropout calls on the same input drew the same mask")
	}
}

func TestDropoutInvalidP(t *testing.T) {
	for _, p := range []float64{-0.1, 1, 1.5, math.NaN()} {
		for _, train := range []bool{true, false} {
			g := NewGraph(Float64, train, 1)
			x := g.addInput("x", Float64, tensor.Shape{2})
			if y := g.Dropout(x, p); y != nil {
				t.Errorf("p=%g: returned a node", p)
			}
			wantErrContains(t, "p", g.Err(), "Dropout", "p =")
		}
	}
}
