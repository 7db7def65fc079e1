package autodiff

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// ---- helpers shared by the op tests ----

// floats returns the elements of a float tensor (0-d included) as float64s.
func floats(d *tensor.Dense) []float64 {
	if isF32(d) {
		src := flat[float32](d)
		out := make([]float64, len(src))
		for i, v := range src {
			out[i] = float64(v)
		}
		return out
	}
	return append([]float64(nil), flat[float64](d)...)
}

// castTo converts a float64 tensor to dt (integer tensors are returned unchanged).
func castTo(t *tensor.Dense, dt Dtype) *tensor.Dense {
	src, ok := t.Data().([]float64)
	if !ok || dt == Float64 {
		return t
	}
	f := make([]float32, len(src))
	for i, v := range src {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(t.Shape().Clone()...), tensor.WithBacking(f))
}

// f32Round rounds every element of a float64 tensor to float32 precision in place, so that
// float32 and float64 runs see identical inputs.
func f32Round(t *tensor.Dense) *tensor.Dense {
	d := t.Data().([]float64)
	for i, v := range d {
		d[i] = float64(float32(v))
	}
	return t
}

func intTensor(vals ...int) *tensor.Dense {
	return tensor.New(tensor.WithShape(len(vals)), tensor.WithBacking(append([]int(nil), vals...)))
}

func denseOf(shape []int, vals ...float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), vals...)))
}

// newTestModel turns params into parameters of dtype dt and returns a model whose builder
// exposes them (and the inputs) to f; f's node is output "out" and, projected, the loss.
func newTestModel(t *testing.T, dt Dtype, params map[string]*tensor.Dense, inputs []string,
	f func(g *Graph, p map[string]*Node) *Node, seed uint64) (*Model, map[string]*Param) {
	t.Helper()
	ps, err := NewParams(dt, 1)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*Param{}
	for n, v := range params {
		p, err := ps.Root().New(n, v.Shape(), Zeros())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Set(v); err != nil {
			t.Fatal(err)
		}
		byName[n] = p
	}
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		nodes := map[string]*Node{}
		for n, p := range byName {
			nodes[n] = g.Param(p)
		}
		for _, n := range inputs {
			nodes[n] = g.Input(n)
		}
		out := f(g, nodes)
		if g.Err() != nil {
			return Outputs{}, g.Err()
		}
		return Outputs{Loss: projectLoss(g, out, 99), Values: map[string]*Node{"out": out}}, g.Err()
	}, seed)
	return m, byName
}

// evalOp runs f once (in training mode if train) in dtype dt and returns its output.
func evalOp(t *testing.T, dt Dtype, train bool, params, inputs map[string]*tensor.Dense,
	f func(g *Graph, p map[string]*Node) *Node) []float64 {
	t.Helper()
	names := []string{}
	in := map[string]*tensor.Dense{}
	for n, v := range inputs {
		names = append(names, n)
		in[n] = castTo(v, dt)
	}
	m, _ := newTestModel(t, dt, params, names, f, 3)
	res, err := m.Run(in, RunMode{Train: train})
	if err != nil {
		t.Fatalf("%v: %v", dt, err)
	}
	return floats(res.Values["out"])
}

// checkValues compares got with want elementwise: |got−want| ≤ atol + rtol·|want|.
func checkValues(t *testing.T, what string, got, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > atol+rtol*math.Abs(want[i]) {
			t.Errorf("%s[%d] = %.10g, want %.10g", what, i, got[i], want[i])
		}
	}
}

// checkBothDtypes evaluates f in float64 and float32, compares the float64 result with
// want (tight) and the float32 result with the float64 one (1e-5 relative).
func checkBothDtypes(t *testing.T, what string, params, inputs map[string]*tensor.Dense,
	f func(g *Graph, p map[string]*Node) *Node, want []float64) {
	t.Helper()
	for _, v := range params {
		f32Round(v)
	}
	for _, v := range inputs {
		if _, ok := v.Data().([]float64); ok {
			f32Round(v)
		}
	}
	got64 := evalOp(t, Float64, false, params, inputs, f)
	checkValues(t, what+" float64", got64, want, 1e-10, 1e-12)
	got32 := evalOp(t, Float32, false, params, inputs, f)
	checkValues(t, what+" float32", got32, got64, 1e-5, 1e-6)
}

// buildErr builds f in a fresh float64 graph and returns g.Err(); it fails the test if
// building panics or leaves no error.
func buildErr(t *testing.T, name string, f func(g *Graph) *Node) error {
	t.Helper()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s: panicked: %v", name, r)
			}
		}()
		g := NewGraph(Float64, true, 1)
		if out := f(g); out != nil && g.Err() != nil {
			t.Errorf("%s: returned a node despite error %v", name, g.Err())
		}
		err = g.Err()
	}()
	if err == nil {
		t.Fatalf("%s: no error", name)
	}
	return err
}

func wantErrContains(t *testing.T, name string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", name)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not mention %q", name, err, p)
		}
	}
}

func positive(rng *rand.Rand, shape ...int) *tensor.Dense {
	t := randTensor(rng, 1, shape...)
	for i, v := range t.Data().([]float64) {
		t.Data().([]float64)[i] = 0.5 + math.Abs(v)
	}
	return t
}

// awayFromZero returns N(0,1) values with |v| ≥ 0.1 (for ReLU and Abs kinks).
func awayFromZero(rng *rand.Rand, shape ...int) *tensor.Dense {
	t := randTensor(rng, 1, shape...)
	d := t.Data().([]float64)
	for i, v := range d {
		if math.Abs(v) < 0.1 {
			d[i] = math.Copysign(0.1+math.Abs(v), v)
		}
	}
	return t
}

var tol = GradCheck{ATol: 1e-7, RTol: 1e-5}

// ---- gradient checks of the wrapped gorgonia ops ----

type opCase struct {
	name   string
	params map[string]*tensor.Dense
	inputs map[string]*tensor.Dense
	f      func(g *Graph, p map[string]*Node) *Node
}

func TestWrappedOpGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	r := func(shape ...int) *tensor.Dense { return randTensor(rng, 1, shape...) }
	two := func(a, b *tensor.Dense) map[string]*tensor.Dense { return map[string]*tensor.Dense{"a": a, "b": b} }
	one := func(a *tensor.Dense) map[string]*tensor.Dense { return map[string]*tensor.Dense{"a": a} }
	var cases []opCase
	for _, s := range [][]int{{1, 1}, {3, 4}, {2, 3, 2}, {5}} {
		cases = append(cases,
			opCase{"Add", two(r(s...), r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Add(p["a"], p["b"]) }},
			opCase{"Sub", two(r(s...), r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Sub(p["a"], p["b"]) }},
			opCase{"Mul", two(r(s...), r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Mul(p["a"], p["b"]) }},
			opCase{"Div", two(r(s...), positive(rng, s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Div(p["a"], p["b"]) }},
			opCase{"Scale", one(r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Scale(p["a"], -1.7) }},
			opCase{"AddConst", one(r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.AddConst(p["a"], 2.5) }},
			opCase{"MulScalar", two(r(s...), r(1)), nil, func(g *Graph, p map[string]*Node) *Node { return g.MulScalar(p["a"], p["b"]) }},
			opCase{"Neg", one(r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Neg(p["a"]) }},
			opCase{"Exp", one(r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Exp(p["a"]) }},
			opCase{"Log", one(positive(rng, s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Log(p["a"]) }},
			opCase{"Tanh", one(r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Tanh(p["a"]) }},
			opCase{"Sigmoid", one(r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Sigmoid(p["a"]) }},
			opCase{"ReLU", one(awayFromZero(rng, s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.ReLU(p["a"]) }},
			opCase{"Abs", one(awayFromZero(rng, s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Abs(p["a"]) }},
			opCase{"Square", one(r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Square(p["a"]) }},
			opCase{"Sqrt", one(positive(rng, s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Sqrt(p["a"]) }},
			opCase{"Softplus", one(r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Softplus(p["a"]) }},
			opCase{"SumAll", one(r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Sum(p["a"]) }},
			opCase{"MeanAll", one(r(s...)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Mean(p["a"]) }},
		)
	}
	softplusBig := denseOf([]int{2, 3}, -50, 50, -30, 30, 0.5, -0.5)
	cases = append(cases, opCase{"Softplus ±50", one(softplusBig), nil, func(g *Graph, p map[string]*Node) *Node { return g.Softplus(p["a"]) }})
	for _, mk := range [][3]int{{2, 3, 4}, {1, 1, 1}, {1, 5, 1}, {4, 1, 3}} {
		m, k, n := mk[0], mk[1], mk[2]
		cases = append(cases, opCase{"MatMul", two(r(m, k), r(k, n)), nil, func(g *Graph, p map[string]*Node) *Node { return g.MatMul(p["a"], p["b"]) }})
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				as, bs := []int{2, m, k}, []int{2, k, n}
				if ta {
					as = []int{2, k, m}
				}
				if tb {
					bs = []int{2, n, k}
				}
				cases = append(cases, opCase{"BatchedMatMul", two(r(as...), r(bs...)), nil, func(g *Graph, p map[string]*Node) *Node {
					return g.BatchedMatMul(p["a"], p["b"], ta, tb)
				}})
			}
		}
	}
	for _, axes := range [][]int{{0}, {1}, {2}, {0, 2}} {
		cases = append(cases,
			opCase{"Sum", one(r(2, 3, 4)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Sum(p["a"], axes...) }},
			opCase{"Mean", one(r(2, 3, 4)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Mean(p["a"], axes...) }})
	}
	cases = append(cases,
		opCase{"Sum size1", one(r(3, 1)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Sum(p["a"], 1) }},
		// Reshape goes through AddConst(·, 0) because a forward-only run currently overwrites
		// a reshaped parameter in place (TestModelDoesNotModifyParams); this checks the
		// gradient alone.
		opCase{"Reshape", one(r(2, 6)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Reshape(g.AddConst(p["a"], 0), []int{3, 4}) }},
		opCase{"Reshape 3d", one(r(2, 6)), nil, func(g *Graph, p map[string]*Node) *Node {
			return g.Reshape(g.AddConst(p["a"], 0), []int{3, 2, 2})
		}},
		opCase{"Transpose", one(r(3, 4)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Transpose(p["a"], 1, 0) }},
		opCase{"Transpose 3d", one(r(2, 3, 4)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Transpose(p["a"], 2, 0, 1) }},
		opCase{"Slice", one(r(4, 5)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Slice(p["a"], 1, 1, 4) }},
		opCase{"Slice axis0", one(r(4, 5)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Slice(p["a"], 0, 2, 4) }},
		opCase{"Slice size1", one(r(4, 5)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Slice(p["a"], 1, 2, 3) }},
		opCase{"Slice size1 axis0", one(r(4, 5)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Slice(p["a"], 0, 3, 4) }},
		opCase{"Slice 3d", one(r(2, 3, 4)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Slice(p["a"], 2, 1, 2) }},
		opCase{"Concat", two(r(2, 3), r(2, 2)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Concat(1, p["a"], p["b"]) }},
		opCase{"Concat axis0", two(r(1, 3), r(2, 3)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Concat(0, p["a"], p["b"], p["a"]) }},
		opCase{"Concat 3d axis1", two(r(2, 3, 4), r(2, 1, 4)), nil, func(g *Graph, p map[string]*Node) *Node {
			return g.Concat(1, p["b"], p["a"], p["b"])
		}},
		opCase{"Concat 3d axis2", two(r(2, 3, 4), r(2, 3, 1)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Concat(2, p["a"], p["b"]) }},
		opCase{"AddBias", two(r(4, 3), r(3)), nil, func(g *Graph, p map[string]*Node) *Node { return g.AddBias(p["a"], p["b"]) }},
		opCase{"AddBias 3d", two(r(2, 4, 3), r(3)), nil, func(g *Graph, p map[string]*Node) *Node { return g.AddBias(p["a"], p["b"]) }},
		opCase{"Gather", one(r(5, 3)), map[string]*tensor.Dense{"ids": intTensor(4, 0, 4, 2, 4)},
			func(g *Graph, p map[string]*Node) *Node { return g.Gather(p["a"], p["ids"]) }},
		opCase{"Gather 1x1", one(r(1, 1)), map[string]*tensor.Dense{"ids": intTensor(0, 0)},
			func(g *Graph, p map[string]*Node) *Node { return g.Gather(p["a"], p["ids"]) }},
	)
	for _, c := range cases {
		checkOp(t, c.name, c.params, c.inputs, c.f, tol)
	}
}

func TestGatherAccumulates(t *testing.T) {
	ps, _ := NewParams(Float64, 1)
	tab, _ := ps.Root().New("emb", []int{3, 2}, Zeros())
	_ = tab.SetFloat64s([]float64{1, 2, 3, 4, 5, 6})
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		out := g.Gather(g.Param(tab), g.Input("ids"))
		return Outputs{Loss: g.Sum(out), Values: map[string]*Node{"out": out}}, g.Err()
	}, 1)
	res, err := m.ForwardBackward(map[string]*tensor.Dense{"ids": intTensor(2, 0, 2, 2)})
	if err != nil {
		t.Fatal(err)
	}
	checkValues(t, "gather", floats(res.Values["out"]), []float64{5, 6, 1, 2, 5, 6, 5, 6}, 0, 0)
	checkValues(t, "scatter", tab.GradFloat64s(), []float64{1, 1, 0, 0, 3, 3}, 0, 0)
	_, err = m.Forward(map[string]*tensor.Dense{"ids": intTensor(0, 3)})
	wantErrContains(t, "gather out of range", err, "Gather", "3")
}

func TestWrappedOpShapeErrors(t *testing.T) {
	in := func(g *Graph, name string, shape ...int) *Node { return g.addInput(name, Float64, tensor.Shape(shape)) }
	for _, tc := range []struct {
		name  string
		f     func(g *Graph) *Node
		parts []string
	}{
		{"MatMul", func(g *Graph) *Node { return g.MatMul(in(g, "a", 2, 3), in(g, "b", 4, 5)) }, []string{"MatMul", "(2, 3)", "(4, 5)"}},
		{"MatMul 3d", func(g *Graph) *Node { return g.MatMul(in(g, "a", 2, 3, 4), in(g, "b", 4, 5)) }, []string{"MatMul", "(2, 3, 4)", "(4, 5)"}},
		{"Add", func(g *Graph) *Node { return g.Add(in(g, "a", 2, 3), in(g, "b", 3, 2)) }, []string{"Add", "(2, 3)", "(3, 2)"}},
		{"Sub", func(g *Graph) *Node { return g.Sub(in(g, "a", 2, 3), in(g, "b", 2)) }, []string{"Sub", "(2, 3)", "(2)"}},
		{"Mul", func(g *Graph) *Node { return g.Mul(in(g, "a", 2, 3), in(g, "b", 2, 4)) }, []string{"Mul", "(2, 3)", "(2, 4)"}},
		{"Div", func(g *Graph) *Node { return g.Div(in(g, "a", 1, 3), in(g, "b", 3, 1)) }, []string{"Div", "(1, 3)", "(3, 1)"}},
		{"MulScalar", func(g *Graph) *Node { return g.MulScalar(in(g, "a", 2, 3), in(g, "b", 2)) }, []string{"MulScalar", "(2)"}},
		{"BatchedMatMul", func(g *Graph) *Node { return g.BatchedMatMul(in(g, "a", 2, 3, 4), in(g, "b", 2, 5, 6), false, false) }, []string{"BatchedMatMul", "(2, 3, 4)", "(2, 5, 6)"}},
		{"BatchedMatMul trans", func(g *Graph) *Node { return g.BatchedMatMul(in(g, "a", 2, 3, 4), in(g, "b", 2, 3, 6), false, true) }, []string{"BatchedMatMul", "(2, 3, 4)", "(2, 3, 6)"}},
		{"BatchedMatMul batch", func(g *Graph) *Node { return g.BatchedMatMul(in(g, "a", 2, 3, 4), in(g, "b", 3, 4, 6), false, false) }, []string{"BatchedMatMul", "(2, 3, 4)", "(3, 4, 6)"}},
		{"Reshape", func(g *Graph) *Node { return g.Reshape(in(g, "a", 2, 3), []int{4, 2}) }, []string{"Reshape", "(2, 3)", "[4 2]"}},
		{"Reshape neg", func(g *Graph) *Node { return g.Reshape(in(g, "a", 2, 3), []int{-1, 6}) }, []string{"Reshape", "[-1 6]"}},
		{"Transpose", func(g *Graph) *Node { return g.Transpose(in(g, "a", 2, 3), 0, 0) }, []string{"Transpose", "[0 0]"}},
		{"Transpose len", func(g *Graph) *Node { return g.Transpose(in(g, "a", 2, 3), 1, 0, 2) }, []string{"Transpose", "(2, 3)"}},
		{"Sum axis", func(g *Graph) *Node { return g.Sum(in(g, "a", 2, 3), 2) }, []string{"Sum", "(2, 3)"}},
		{"Mean axis", func(g *Graph) *Node { return g.Mean(in(g, "a", 2, 3), 0, 0) }, []string{"Mean", "(2, 3)"}},
		{"Slice", func(g *Graph) *Node { return g.Slice(in(g, "a", 2, 3), 1, 2, 5) }, []string{"Slice", "(2, 3)"}},
		{"Slice empty", func(g *Graph) *Node { return g.Slice(in(g, "a", 2, 3), 1, 2, 2) }, []string{"Slice", "(2, 3)"}},
		{"Concat", func(g *Graph) *Node { return g.Concat(1, in(g, "a", 2, 3), in(g, "b", 3, 3)) }, []string{"Concat", "(2, 3)", "(3, 3)"}},
		{"Concat dims", func(g *Graph) *Node { return g.Concat(0, in(g, "a", 2, 3), in(g, "b", 3)) }, []string{"Concat", "(2, 3)", "(3)"}},
		{"AddBias", func(g *Graph) *Node { return g.AddBias(in(g, "a", 2, 3), in(g, "b", 2)) }, []string{"AddBias", "(2, 3)", "(2)"}},
		{"Gather float ids", func(g *Graph) *Node { return g.Gather(in(g, "a", 4, 3), in(g, "b", 2)) }, []string{"Gather", "float64"}},
		{"Gather 1-D table", func(g *Graph) *Node {
			return g.Gather(in(g, "a", 4), g.addInput("b", tensor.Int, tensor.Shape{2}))
		}, []string{"Gather", "(4)", "(2)"}},
		{"nil input", func(g *Graph) *Node { return g.Add(in(g, "a", 2), nil) }, []string{"Add", "nil"}},
		{"foreign node", func(g *Graph) *Node {
			other := NewGraph(Float64, false, 1)
			return g.Add(in(g, "a", 2), other.addInput("b", Float64, tensor.Shape{2}))
		}, []string{"Add", "another graph"}},
		{"sticky", func(g *Graph) *Node {
			bad := g.MatMul(in(g, "a", 2, 3), in(g, "b", 4, 5))
			return g.Exp(g.Add(bad, bad))
		}, []string{"MatMul"}},
	} {
		wantErrContains(t, tc.name, buildErr(t, tc.name, tc.f), tc.parts...)
	}
}

// TestShapesExact: gorgonia's tensor.Shape.Eq treats (3), (3, 1) and (1, 3) as equal, so
// shape checks must compare dimensions exactly.
func TestShapesExact(t *testing.T) {
	g := NewGraph(Float64, false, 1)
	x := g.addInput("x", Float64, tensor.Shape{4, 5})
	for _, tc := range []struct {
		axis, lo, hi int
		want         []int
	}{{1, 2, 3, []int{4, 1}}, {0, 3, 4, []int{1, 5}}, {1, 0, 5, []int{4, 5}}} {
		if s := g.Slice(x, tc.axis, tc.lo, tc.hi); s == nil || !equalInts(s.Shape(), tc.want) {
			t.Errorf("Slice(axis %d, %d:%d) of (4, 5) has shape %v, want %v (err %v)", tc.axis, tc.lo, tc.hi, s.Shape(), tc.want, g.Err())
		}
	}
	v := g.addInput("v", Float64, tensor.Shape{3})
	if r := g.Reshape(v, []int{3, 1}); r == nil || !equalInts(r.Shape(), []int{3, 1}) {
		t.Errorf("Reshape (3) to [3 1] gave %v", r.Shape())
	}
	wantErrContains(t, "Add (3)+(1,3)", buildErr(t, "Add", func(g *Graph) *Node {
		return g.Add(g.addInput("a", Float64, tensor.Shape{3}), g.addInput("b", Float64, tensor.Shape{1, 3}))
	}), "Add", "(3)", "(1, 3)")
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
