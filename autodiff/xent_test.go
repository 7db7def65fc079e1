package autodiff

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

func ceModel(g *Graph, p map[string]*Node) *Node { return g.CrossEntropy(p["x"], p["t"], -100) }

func TestCrossEntropyGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct {
		name    string
		shape   []int
		scale   float64
		targets []int
	}{
		{"1x1", []int{1, 1}, 1, []int{0}},
		{"5x1", []int{5, 1}, 1, []int{0, 0, 0, 0, 0}},
		{"4x3", []int{4, 3}, 1, []int{0, 2, 1, 2}},
		{"1x6", []int{1, 6}, 3, []int{5}},
		{"large", []int{6, 5}, 1e4, []int{0, 1, 2, 3, 4, 0}},
		{"ignored", []int{5, 4}, 2, []int{3, -100, 0, -100, 1}},
		{"allIgnored", []int{3, 4}, 2, []int{-100, -100, -100}},
	} {
		checkOp(t, "CE "+tc.name, map[string]*tensor.Dense{"x": randTensor(rng, tc.scale, tc.shape...)},
			map[string]*tensor.Dense{"t": intTensor(tc.targets...)}, ceModel, tol)
	}
	// A class index used as the ignore index.
	checkOp(t, "CE ignore class", map[string]*tensor.Dense{"x": randTensor(rng, 1, 4, 3)},
		map[string]*tensor.Dense{"t": intTensor(0, 1, 2, 1)}, func(g *Graph, p map[string]*Node) *Node {
			return g.CrossEntropy(p["x"], p["t"], 1)
		}, tol)
}

// naiveCE computes the loss without a max shift (fine for small logits).
func naiveCE(x []float64, targets []int, c, ignore int) float64 {
	var sum float64
	n := 0
	for r, tg := range targets {
		if tg == ignore {
			continue
		}
		var z float64
		for j := 0; j < c; j++ {
			z += math.Exp(x[r*c+j])
		}
		sum += -math.Log(math.Exp(x[r*c+tg]) / z)
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func TestCrossEntropyValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, tc := range []struct {
		rows, cols int
		targets    []int
	}{
		{3, 4, []int{0, 3, 2}},
		{4, 5, []int{4, -100, 0, 2}},
		{1, 1, []int{0}},
		{512, 37, nil},
	} {
		if tc.targets == nil {
			tc.targets = make([]int, tc.rows)
			for i := range tc.targets {
				tc.targets[i] = rng.IntN(tc.cols)
			}
			tc.targets[7] = -100
		}
		x := f32Round(randTensor(rng, 2, tc.rows, tc.cols))
		want := naiveCE(x.Data().([]float64), tc.targets, tc.cols, -100)
		checkBothDtypes(t, "CE", map[string]*tensor.Dense{"x": x}, map[string]*tensor.Dense{"t": intTensor(tc.targets...)},
			ceModel, []float64{want})
	}
	// Large logits, hand-computed: row 0 [1e4, 1e4+1, −1e4] target 0 → 1 + log1p(e⁻¹);
	// row 1 [−1e4, 0, 1e4] target 2 → ≈ 0; row 2 target 0 → 2e4 (the −1e4 logit vs 1e4).
	x := denseOf([]int{3, 3}, 1e4, 1e4+1, -1e4, -1e4, 0, 1e4, -1e4, 0, 1e4)
	want := (1 + math.Log1p(math.Exp(-1)) + 0 + 2e4) / 3
	for _, dt := range []Dtype{Float64, Float32} {
		got := evalOp(t, dt, false, map[string]*tensor.Dense{"x": x}, map[string]*tensor.Dense{"t": intTensor(0, 2, 0)}, ceModel)
		checkValues(t, "CE large "+dt.String(), got, []float64{want}, 1e-6, 0)
	}
}

func TestCrossEntropyAllIgnored(t *testing.T) {
	for _, dt := range []Dtype{Float32, Float64} {
		m, params := newTestModel(t, dt, map[string]*tensor.Dense{"x": denseOf([]int{2, 3}, 1, 2, 3, 4, 5, 6)},
			[]string{"t"}, ceModel, 1)
		res, err := m.ForwardBackward(map[string]*tensor.Dense{"t": intTensor(-100, -100)})
		if err != nil {
			t.Fatal(err)
		}
		if got := floats(res.Values["out"])[0]; got != 0 {
			t.Errorf("%v: loss %g, want 0", dt, got)
		}
		for i := 0; i < 6; i++ {
			if g := params["x"].GradAt(i); g != 0 {
				t.Errorf("%v: grad[%d] = %g, want 0", dt, i, g)
			}
		}
	}
}

func TestCrossEntropyGradientValues(t *testing.T) {
	// d loss / d logits = (softmax − onehot) / count, checked directly with loss = CE.
	ps, _ := NewParams(Float64, 1)
	p, _ := ps.Root().New("x", []int{3, 2}, Zeros())
	_ = p.SetFloat64s([]float64{0, 0, 1, 2, 5, 5})
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		return Outputs{Loss: g.CrossEntropy(g.Param(p), g.Input("t"), -1)}, g.Err()
	}, 1)
	res, err := m.ForwardBackward(map[string]*tensor.Dense{"t": intTensor(1, -1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	checkValues(t, "loss", []float64{res.Loss}, []float64{math.Log(2)}, 1e-14, 0)
	checkValues(t, "grad", p.GradFloat64s(), []float64{0.25, -0.25, 0, 0, -0.25, 0.25}, 1e-14, 1e-16)
}

func TestCrossEntropyErrors(t *testing.T) {
	ps, _ := NewParams(Float64, 1)
	p, _ := ps.Root().New("x", []int{3, 4}, Normal(0, 1))
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		return Outputs{Loss: g.CrossEntropy(g.Param(p), g.Input("t"), -100)}, g.Err()
	}, 1)
	for _, tc := range []struct {
		targets []int
		parts   []string
	}{
		{[]int{0, 1, 4}, []string{"CrossEntropy", "row 2", "target 4"}},
		{[]int{-1, 1, 2}, []string{"CrossEntropy", "row 0", "target -1"}},
	} {
		for _, mode := range []RunMode{{}, {Train: true, Backward: true}} {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panic: %v", r)
					}
				}()
				_, err = m.Run(map[string]*tensor.Dense{"t": intTensor(tc.targets...)}, mode)
			}()
			wantErrContains(t, "out of range", err, tc.parts...)
		}
	}
	// The model still works afterwards.
	if _, err := m.ForwardBackward(map[string]*tensor.Dense{"t": intTensor(0, 1, 3)}); err != nil {
		t.Fatalf("after an error: %v", err)
	}
	for _, tc := range []struct {
		name  string
		f     func(g *Graph) *Node
		parts []string
	}{
		{"1-D logits", func(g *Graph) *Node {
			return g.CrossEntropy(g.addInput("x", Float64, tensor.Shape{4}), g.addInput("t", tensor.Int, tensor.Shape{4}), -100)
		}, []string{"CrossEntropy", "(4)"}},
		{"rows", func(g *Graph) *Node {
			return g.CrossEntropy(g.addInput("x", Float64, tensor.Shape{3, 4}), g.addInput("t", tensor.Int, tensor.Shape{2}), -100)
		}, []string{"CrossEntropy", "(3, 4)", "(2)"}},
		{"float targets", func(g *Graph) *Node {
			return g.CrossEntropy(g.addInput("x", Float64, tensor.Shape{3, 4}), g.addInput("t", Float64, tensor.Shape{3}), -100)
		}, []string{"CrossEntropy", "float64"}},
		{"int64 targets", func(g *Graph) *Node {
			return g.CrossEntropy(g.addInput("x", Float64, tensor.Shape{3, 4}), g.addInput("t", tensor.Int64, tensor.Shape{3}), -100)
		}, []string{"CrossEntropy", "int64"}},
		{"mse", func(g *Graph) *Node {
			return g.MSE(g.addInput("x", Float64, tensor.Shape{3, 4}), g.addInput("y", Float64, tensor.Shape{4, 3}))
		}, []string{"MSE", "(3, 4)", "(4, 3)"}},
	} {
		wantErrContains(t, tc.name, buildErr(t, tc.name, tc.f), tc.parts...)
	}
	g := NewGraph(Float64, false, 1)
	x, tg := g.addInput("x", Float64, tensor.Shape{3, 4}), g.addInput("t", tensor.Int, tensor.Shape{3})
	if a, b := g.CrossEntropy(x, tg, -100), g.CrossEntropy(x, tg, 0); a == nil || b == nil || a.n == b.n {
		t.Error("cross entropies with different ignore indices were merged")
	}
}

func TestMSE(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, s := range [][]int{{1, 1}, {5, 1}, {3, 4}, {2, 3, 5}, {7}} {
		checkOp(t, "MSE", map[string]*tensor.Dense{"p": randTensor(rng, 1, s...), "y": randTensor(rng, 1, s...)}, nil,
			func(g *Graph, p map[string]*Node) *Node { return g.MSE(p["p"], p["y"]) }, tol)
	}
	for _, n := range []int{6, 10000} {
		pr, y := f32Round(randTensor(rng, 1, 2, n/2)), f32Round(randTensor(rng, 1, 2, n/2))
		var want float64
		for i, v := range pr.Data().([]float64) {
			d := v - y.Data().([]float64)[i]
			want += d * d
		}
		want /= float64(n)
		checkBothDtypes(t, "MSE", map[string]*tensor.Dense{"p": pr, "y": y}, nil,
			func(g *Graph, p map[string]*Node) *Node { return g.MSE(p["p"], p["y"]) }, []float64{want})
	}
	// Hand: pred [1, 2], target [0, 4] → (1 + 4)/2; grad pred = (p − t) = [1, −2].
	ps, _ := NewParams(Float32, 1)
	p, _ := ps.Root().New("p", []int{2}, Zeros())
	_ = p.SetFloat64s([]float64{1, 2})
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		return Outputs{Loss: g.MSE(g.Param(p), g.Input("y"))}, g.Err()
	}, 1)
	res, err := m.Run(map[string]*tensor.Dense{"y": tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{0, 4}))},
		RunMode{Backward: true, InputGrads: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Loss != 2.5 {
		t.Errorf("MSE = %g, want 2.5", res.Loss)
	}
	checkValues(t, "MSE grad pred", floats(p.Grad()), []float64{1, -2}, 0, 0)
	checkValues(t, "MSE grad target", floats(res.InputGrads["y"]), []float64{-1, 2}, 0, 0)
	if !strings.Contains(m.params.list[0].name, "p") {
		t.Fatal("unexpected parameter name")
	}
}

// TestCrossEntropyFloat32MatchesFloat64 checks the float32 path (vector max, exp and
// scale) against the float64 one on the same float32-representable logits: loss and
// gradient within float32 round-off.
func TestCrossEntropyFloat32MatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const rows, cols = 300, 65
	x := f32Round(randTensor(rng, 4, rows, cols))
	targets := make([]int, rows)
	for i := range targets {
		targets[i] = rng.IntN(cols)
	}
	targets[5] = -100
	run := func(dt Dtype) (float64, []float64) {
		m, params := newTestModel(t, dt, map[string]*tensor.Dense{"x": x.Clone().(*tensor.Dense)}, []string{"t"}, ceModel, 1)
		res, err := m.ForwardBackward(map[string]*tensor.Dense{"t": intTensor(targets...)})
		if err != nil {
			t.Fatal(err)
		}
		g := make([]float64, rows*cols)
		for i := range g {
			g[i] = params["x"].GradAt(i)
		}
		return floats(res.Values["out"])[0], g
	}
	l32, g32 := run(Float32)
	l64, g64 := run(Float64)
	if d := math.Abs(l32 - l64); d > 1e-6*math.Abs(l64) {
		t.Errorf("loss float32 %v, float64 %v", l32, l64)
	}
	var worst float64
	for i := range g64 {
		worst = max(worst, math.Abs(g32[i]-g64[i]))
	}
	// Gradients are at most 1/count ≈ 3.3e-3; float32 keeps ≈ 7 digits of that.
	t.Logf("max |Δgradient| %.3g, |Δloss| %.3g", worst, math.Abs(l32-l64))
	if worst > 1e-9 {
		t.Errorf("gradients differ by %g", worst)
	}
}
