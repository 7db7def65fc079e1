package autodiff

// Regression tests for gorgonia v0.9.18 bugs that Locus works around. Each test asserts
// the buggy behaviour as measured; if one fails, gorgonia changed and the workaround named
// in the test should be re-evaluated (it may no longer be needed, or may need changing).

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

const gorgoniaChanged = "gorgonia changed: re-evaluate our workaround"

func gVec(g *G.ExprGraph, name string, shape []int, v ...float64) *G.Node {
	return G.NewTensor(g, tensor.Float64, len(shape), G.WithShape(shape...), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), v...)))))
}

func gRun(t *testing.T, g *G.ExprGraph, opts ...G.VMOpt) G.VM {
	t.Helper()
	m := G.NewTapeMachine(g, opts...)
	if err := m.RunAll(); err != nil {
		t.Fatalf("RunAll: %v", err)
	}
	return m
}

// Workaround: Graph.Softmax / LogSoftmax / CrossEntropy (fused, per-row max).
// gorgonia's softmax takes every row's running maximum starting from the tensor's first
// element (xArr[0]) and never looks at the row's own first element: a row whose maximum
// is its first element, or a row after a first row with a large first element, gives NaN.
func TestGorgoniaSoftmaxRowMaxFromFirstElement(t *testing.T) {
	for _, tc := range []struct {
		x       []float64
		nanFrom int // first index of row 1
	}{
		{[]float64{0, 0, 0, 1000, 0, 0}, 3},        // row 1's max is its first element: exp(1000) = Inf
		{[]float64{1000, 0, 0, 0, 1, 2}, 3},        // row 1 shifted by row 0's 1000: 0/0
		{[]float64{-1000, 1000, 999, 1, 2, 3}, -1}, // the single-row case [-1000, 1000, 999] is right
	} {
		g := G.NewGraph()
		s := G.Must(G.SoftMax(gVec(g, "x", []int{2, 3}, tc.x...)))
		gRun(t, g)
		out := s.Value().Data().([]float64)
		if tc.nanFrom < 0 {
			if math.IsNaN(out[1]) || math.Abs(out[1]-1/(1+math.Exp(-1))) > 1e-12 {
				t.Errorf("softmax %v = %v", tc.x, out)
			}
			continue
		}
		if !math.IsNaN(out[tc.nanFrom]) {
			t.Errorf("SoftMax(%v) = %v, expected NaN in row 1; %s", tc.x, out, gorgoniaChanged)
		}
	}
}

// Workaround: Graph.Softmax and Graph.LogSoftmax are distinct fused ops.
// softmaxOp.WriteHash omits isLog, so LogSoftMax(x) hash-conses into SoftMax(x) and
// returns softmax values.
func TestGorgoniaSoftmaxHashConsing(t *testing.T) {
	g := G.NewGraph()
	x := gVec(g, "x", []int{1, 3}, 1, 2, 3)
	s1 := G.Must(G.SoftMax(x))
	s2 := G.Must(G.SoftMax(x))
	ls := G.Must(G.LogSoftMax(x))
	if s1 != s2 {
		t.Errorf("two SoftMax(x) are different nodes; %s", gorgoniaChanged)
	}
	if ls != s1 {
		t.Fatalf("LogSoftMax(x) no longer merges with SoftMax(x); %s", gorgoniaChanged)
	}
	gRun(t, g)
	if v := ls.Value().Data().([]float64); v[0] < 0 {
		t.Errorf("LogSoftMax(x) after SoftMax(x) = %v (log values); %s", v, gorgoniaChanged)
	}
}

// Workaround: RMSNorm/LayerNorm are fused; never G.InverseSqrt in a differentiated graph.
// d/dx x^(−1/2) should be −x^(−3/2)/2; gorgonia gives −x^(3/2)/2.
func TestGorgoniaInverseSqrtGradient(t *testing.T) {
	g := G.NewGraph()
	x := gVec(g, "x", []int{2}, 4, 9)
	c := G.Must(G.Sum(G.Must(G.InverseSqrt(x))))
	grads, err := G.Grad(c, x)
	if err != nil {
		t.Fatal(err)
	}
	gRun(t, g)
	got := grads[0].Value().Data().([]float64)
	right := []float64{-0.5 / 8, -0.5 / 27}
	buggy := []float64{-0.5 * 8, -0.5 * 27}
	for i := range got {
		if math.Abs(got[i]-right[i]) < 1e-12 {
			t.Errorf("InverseSqrt gradient[%d] = %g is now correct; %s", i, got[i], gorgoniaChanged)
		} else if math.Abs(got[i]-buggy[i]) > 1e-9 {
			t.Errorf("InverseSqrt gradient[%d] = %g, measured %g before; %s", i, got[i], buggy[i], gorgoniaChanged)
		}
	}
}

// Workaround: Graph.LogSumExp (fused, kernelops.go).
// G.LogSumExp subtracts a reduced max without broadcasting (so a matrix fails shape
// inference) and computes log(Σexp(x−m) + m) instead of log Σexp(x−m) + m.
func TestGorgoniaLogSumExpShape(t *testing.T) {
	g := G.NewGraph()
	if _, err := G.LogSumExp(gVec(g, "x", []int{2, 3}, 1, 2, 3, 4, 5, 6), 1); err == nil {
		t.Errorf("LogSumExp over axis 1 of a (2, 3) matrix now builds; %s", gorgoniaChanged)
	}
	g = G.NewGraph()
	l, err := G.LogSumExp(gVec(g, "v", []int{3}, 1, 2, 3), 0)
	if err != nil {
		t.Fatalf("LogSumExp of a vector: %v; %s", err, gorgoniaChanged)
	}
	gRun(t, g)
	want := 3 + math.Log(1+math.Exp(-1)+math.Exp(-2)) // 3.4076
	got := l.Value().Data().(float64)
	if math.Abs(got-want) < 1e-9 {
		t.Errorf("LogSumExp([1 2 3]) = %g is now correct; %s", got, gorgoniaChanged)
	}
	if buggy := math.Log(1 + math.Exp(-1) + math.Exp(-2) + 3); math.Abs(got-buggy) > 1e-12 {
		t.Errorf("LogSumExp([1 2 3]) = %g, measured %g before; %s", got, buggy, gorgoniaChanged)
	}
}

// Workaround: Graph.Dropout (fused, impure, seeded from the Model's generator).
// G.Dropout hashes without p (and without identity), so dropouts with different p on
// the same input merge; its gradient scales kept elements by 1/p instead of 1/(1−p); and
// it seeds itself from the clock.
func TestGorgoniaDropout(t *testing.T) {
	g := G.NewGraph()
	x := gVec(g, "x", []int{4}, 1, 1, 1, 1)
	if G.Must(G.Dropout(x, 0.1)) != G.Must(G.Dropout(x, 0.5)) {
		t.Errorf("Dropout(x, 0.1) and Dropout(x, 0.5) are now different nodes; %s", gorgoniaChanged)
	}
	g = G.NewGraph()
	ones := make([]float64, 2000)
	for i := range ones {
		ones[i] = 1
	}
	x = gVec(g, "x", []int{2000}, ones...)
	d := G.Must(G.Dropout(x, 0.2))
	grads, err := G.Grad(G.Must(G.Sum(d)), x)
	if err != nil {
		t.Fatal(err)
	}
	gRun(t, g)
	out, gr := d.Value().Data().([]float64), grads[0].Value().Data().([]float64)
	for i := range out {
		if out[i] == 0 {
			continue
		}
		if math.Abs(out[i]-1.25) > 1e-12 {
			t.Fatalf("kept output %g, measured 1/(1−p) = 1.25 before; %s", out[i], gorgoniaChanged)
		}
		if math.Abs(gr[i]-5) > 1e-12 {
			t.Fatalf("gradient of a kept element = %g, measured 1/p = 5 before (right: 1.25); %s", gr[i], gorgoniaChanged)
		}
	}
}

// Workaround: optim.AdamW (our own). gorgonia's AdamW.Step rebinds its local w to new
// tensors (tensor.Mul without UseUnsafe) and never writes the node's value: no update.
func TestGorgoniaAdamWNeverUpdates(t *testing.T) {
	g := G.NewGraph()
	w := gVec(g, "w", []int{3}, 1, 2, 3)
	if _, err := G.Grad(G.Must(G.Sum(G.Must(G.Square(w)))), w); err != nil {
		t.Fatal(err)
	}
	gRun(t, g, G.BindDualValues(w))
	s := G.NewAdamW(G.WithLearnRate(0.1))
	if err := s.Step(G.NodesToValueGrads(G.Nodes{w})); err != nil {
		t.Fatal(err)
	}
	if got := w.Value().Data().([]float64); got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Errorf("AdamW step now changes the weights to %v; %s", got, gorgoniaChanged)
	}
	// For contrast, Adam does update.
	a := G.NewAdamSolver(G.WithLearnRate(0.1))
	g2 := G.NewGraph()
	w2 := gVec(g2, "w", []int{3}, 1, 2, 3)
	if _, err := G.Grad(G.Must(G.Sum(G.Must(G.Square(w2)))), w2); err != nil {
		t.Fatal(err)
	}
	gRun(t, g2, G.BindDualValues(w2))
	if err := a.Step(G.NodesToValueGrads(G.Nodes{w2})); err != nil {
		t.Fatal(err)
	}
	if got := w2.Value().Data().([]float64); got[0] == 1 {
		t.Errorf("Adam did not update: %v", got)
	}
}

// Workaround: optim's clipping by global norm. gorgonia's WithClip clamps each element
// to [−c, c], which changes the gradient's direction.
func TestGorgoniaWithClipPerElement(t *testing.T) {
	g := G.NewGraph()
	w := gVec(g, "w", []int{2}, 0, 0)
	k := gVec(g, "k", []int{2}, 3, 4)
	if _, err := G.Grad(G.Must(G.Sum(G.Must(G.HadamardProd(w, k)))), w); err != nil {
		t.Fatal(err)
	}
	gRun(t, g, G.BindDualValues(w))
	s := G.NewVanillaSolver(G.WithLearnRate(1), G.WithClip(1))
	if err := s.Step(G.NodesToValueGrads(G.Nodes{w})); err != nil {
		t.Fatal(err)
	}
	got := w.Value().Data().([]float64) // gradient (3, 4): by norm → (−0.6, −0.8)
	if got[0] != -1 || got[1] != -1 {
		t.Errorf("WithClip(1) on gradient (3, 4) moved w to %v, measured (−1, −1) before; %s", got, gorgoniaChanged)
	}
}

// Workaround: Model.exec calls vm.Reset() after every run.
// A second RunAll without Reset recomputes nothing: new input values are ignored.
func TestGorgoniaRunAllWithoutReset(t *testing.T) {
	g := G.NewGraph()
	x := gVec(g, "x", []int{2}, 1, 2)
	y := G.Must(G.Sum(x))
	m := gRun(t, g)
	if err := G.Let(x, tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{10, 20}))); err != nil {
		t.Fatal(err)
	}
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	if v := y.Value().Data().(float64); v != 3 {
		t.Errorf("second RunAll without Reset gave %g (measured 3 before); %s", v, gorgoniaChanged)
	}
	m.Reset()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	if v := y.Value().Data().(float64); v != 30 {
		t.Errorf("after Reset: %g, want 30", v)
	}
}

// Workaround: Model reads gradients with G.Read and adds them into Param.Grad; it never
// binds dual values. With BindDualValues, gorgonia accumulates gradients across runs
// until they are cleared.
func TestGorgoniaBindDualValuesAccumulates(t *testing.T) {
	g := G.NewGraph()
	w := gVec(g, "w", []int{2}, 1, 2)
	if _, err := G.Grad(G.Must(G.Sum(G.Must(G.Square(w)))), w); err != nil {
		t.Fatal(err)
	}
	m := gRun(t, g, G.BindDualValues(w))
	g1, _ := w.Grad()
	first := append([]float64(nil), g1.Data().([]float64)...)
	m.Reset()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	g2, _ := w.Grad()
	second := g2.Data().([]float64)
	if first[0] != 2 || first[1] != 4 {
		t.Fatalf("first gradient %v, want [2 4]", first)
	}
	if second[0] != 4 || second[1] != 8 {
		t.Errorf("second run's gradient %v, measured [4 8] (accumulated) before; %s", second, gorgoniaChanged)
	}
}
