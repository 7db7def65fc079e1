package autodiff

import (
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"gorgonia.org/tensor"
)

// mlp is a small model: h = tanh(x·W + b), loss = mean((h − y)²) with y optional.
type mlp struct {
	ps   *Params
	w, b *Param
}

func newMLP(t *testing.T, dt Dtype) *mlp {
	t.Helper()
	ps, err := NewParams(dt, 42)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ps.Root().New("w", []int{3, 2}, Normal(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ps.Root().New("b", []int{2}, Normal(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	return &mlp{ps: ps, w: w, b: b}
}

func (m *mlp) model() *Model {
	return NewModel(m.ps, func(g *Graph) (Outputs, error) {
		x := g.Input("x")
		h := g.Tanh(g.AddBias(g.MatMul(x, g.Param(m.w)), g.Param(m.b)))
		out := Outputs{Values: map[string]*Node{"h": h}}
		if g.HasInput("y") {
			out.Loss = g.MSE(h, g.Input("y"))
		} else {
			out.Loss = g.Sum(h)
		}
		return out, g.Err()
	}, 1)
}

// naive returns tanh(x·W + b) computed directly.
func (m *mlp) naive(x []float64, rows int) []float64 {
	out := make([]float64, rows*2)
	for r := 0; r < rows; r++ {
		for j := 0; j < 2; j++ {
			s := m.b.At(j)
			for k := 0; k < 3; k++ {
				s += x[r*3+k] * m.w.At(k*2+j)
			}
			out[r*2+j] = math.Tanh(s)
		}
	}
	return out
}

func inputOf(dt Dtype, rows int, rng *rand.Rand) (*tensor.Dense, []float64) {
	t := f32Round(randTensor(rng, 1, rows, 3))
	return castTo(t, dt), t.Data().([]float64)
}

func TestModelRunTwiceSameLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := newMLP(t, Float64)
	mod := m.model()
	x, _ := inputOf(Float64, 4, rng)
	in := map[string]*tensor.Dense{"x": x}
	r1, err := mod.Forward(in)
	if err != nil {
		t.Fatal(err)
	}
	l1 := r1.Loss
	r2, err := mod.Forward(in)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Loss != l1 {
		t.Errorf("second run loss %g, first %g", r2.Loss, l1)
	}
	// A changed parameter or input is seen by the next run (the machine is reset).
	m.b.SetAt(0, m.b.At(0)+1)
	r3, _ := mod.Forward(in)
	if r3.Loss == l1 {
		t.Error("a changed parameter did not change the loss")
	}
	x.Data().([]float64)[0] += 1
	r4, _ := mod.Forward(in)
	if r4.Loss == r3.Loss {
		t.Error("a changed input did not change the loss")
	}
}

func TestModelGradientsAccumulate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := newMLP(t, Float32)
	mod := m.model()
	x, _ := inputOf(Float32, 4, rng)
	in := map[string]*tensor.Dense{"x": x}
	if _, err := mod.ForwardBackward(in); err != nil {
		t.Fatal(err)
	}
	first := floats(m.w.Grad())
	if _, err := mod.ForwardBackward(in); err != nil {
		t.Fatal(err)
	}
	second := floats(m.w.Grad())
	for i := range first {
		if first[i] == 0 {
			t.Fatalf("grad[%d] is 0", i)
		}
		if math.Abs(second[i]-2*first[i]) > 1e-6*math.Abs(first[i]) {
			t.Errorf("after two backward passes grad[%d] = %g, want 2×%g", i, second[i], first[i])
		}
	}
	m.ps.ZeroGrad()
	for _, p := range m.ps.List() {
		for i := 0; i < p.Size(); i++ {
			if p.GradAt(i) != 0 {
				t.Fatalf("%s grad[%d] = %g after ZeroGrad", p.Name(), i, p.GradAt(i))
			}
		}
	}
	// A forward-only run adds nothing.
	if _, err := mod.Forward(in); err != nil {
		t.Fatal(err)
	}
	if g := m.w.GradAt(0); g != 0 {
		t.Errorf("Forward changed a gradient to %g", g)
	}
}

func TestModelBatchSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []Dtype{Float32, Float64} {
		m := newMLP(t, dt)
		mod := m.model()
		for _, rows := range []int{4, 3, 1, 4} {
			x, xv := inputOf(dt, rows, rng)
			res, err := mod.ForwardBackward(map[string]*tensor.Dense{"x": x})
			if err != nil {
				t.Fatalf("%v rows=%d: %v", dt, rows, err)
			}
			want := m.naive(xv, rows)
			checkValues(t, "h", floats(res.Values["h"]), want, 1e-6, 1e-7)
			var sum float64
			for _, v := range want {
				sum += v
			}
			if math.Abs(res.Loss-sum) > 1e-5 {
				t.Errorf("%v rows=%d: loss %g, want %g", dt, rows, res.Loss, sum)
			}
		}
		if mod.cache.len() != 3 {
			t.Errorf("%v: %d compiled graphs, want 3 (one per batch size)", dt, mod.cache.len())
		}
	}
}

// TestModelResultsAfterBackward checks that intermediate values returned by a run are
// not clobbered by the backward pass, and that parameter gradients are right.
func TestModelResultsAfterBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m := newMLP(t, Float64)
	mod := m.model()
	x, xv := inputOf(Float64, 5, rng)
	yt := randTensor(rng, 1, 5, 2)
	res, err := mod.Run(map[string]*tensor.Dense{"x": x, "y": yt}, RunMode{Train: true, Backward: true, InputGrads: true})
	if err != nil {
		t.Fatal(err)
	}
	h := m.naive(xv, 5)
	checkValues(t, "h after backward", floats(res.Values["h"]), h, 1e-12, 1e-14)
	y := yt.Data().([]float64)
	var loss float64
	dpre := make([]float64, 10) // dL/d(xW+b)
	for i := range h {
		d := h[i] - y[i]
		loss += d * d / 10
		dpre[i] = 2 * d / 10 * (1 - h[i]*h[i])
	}
	if math.Abs(res.Loss-loss) > 1e-12 {
		t.Errorf("loss %g, want %g", res.Loss, loss)
	}
	dw := make([]float64, 6)
	db := make([]float64, 2)
	dx := make([]float64, 15)
	for r := 0; r < 5; r++ {
		for j := 0; j < 2; j++ {
			db[j] += dpre[r*2+j]
			for k := 0; k < 3; k++ {
				dw[k*2+j] += xv[r*3+k] * dpre[r*2+j]
				dx[r*3+k] += m.w.At(k*2+j) * dpre[r*2+j]
			}
		}
	}
	checkValues(t, "dW", m.w.GradFloat64s(), dw, 1e-10, 1e-14)
	checkValues(t, "db", m.b.GradFloat64s(), db, 1e-10, 1e-14)
	checkValues(t, "dx", floats(res.InputGrads["x"]), dx, 1e-10, 1e-14)
	checkValues(t, "dy", floats(res.InputGrads["y"]), func() []float64 {
		d := make([]float64, 10)
		for i := range d {
			d[i] = -2 * (h[i] - y[i]) / 10
		}
		return d
	}(), 1e-10, 1e-14)
}

// TestModelDoesNotModifyParams runs models in every mode and checks that parameter values
// and input tensors are unchanged afterwards.
func TestModelDoesNotModifyParams(t *testing.T) {
	for name, f := range map[string]func(g *Graph, p, x *Node) *Node{
		"mlp":       func(g *Graph, p, x *Node) *Node { return g.Tanh(g.MatMul(x, p)) },
		"slice":     func(g *Graph, p, x *Node) *Node { return g.Add(g.Slice(p, 1, 0, 1), g.Slice(x, 1, 1, 2)) },
		"transpose": func(g *Graph, p, x *Node) *Node { return g.Transpose(g.Mul(p, g.Slice(x, 1, 0, 2)), 1, 0) },
		"reshape": func(g *Graph, p, x *Node) *Node {
			return g.Add(g.Reshape(p, []int{6}), g.Reshape(g.Slice(x, 1, 0, 2), []int{6}))
		},
		"reshapeIn": func(g *Graph, p, x *Node) *Node {
			return g.Mul(g.Reshape(x, []int{9}), g.Reshape(g.MatMul(p, g.Transpose(p, 1, 0)), []int{9}))
		},
		"layernorm": func(g *Graph, p, x *Node) *Node {
			return g.LayerNorm(x, g.Reshape(g.Slice(p, 1, 0, 1), []int{3}), nil, 1e-5)
		},
		"dropoutGELU": func(g *Graph, p, x *Node) *Node { return g.GELU(g.Dropout(g.MatMul(x, p), 0.5), GELUTanh) },
	} {
		for _, mode := range []RunMode{{}, {Train: true}, {Backward: true}, {Train: true, Backward: true, InputGrads: true}} {
			ps, _ := NewParams(Float64, 1)
			p, _ := ps.Root().New("p", []int{3, 2}, Normal(0, 1))
			before := append([]float64(nil), p.Float64s()...)
			x := randTensor(rand.New(rand.NewPCG(1, 1)), 1, 3, 3)
			xBefore := append([]float64(nil), x.Data().([]float64)...)
			m := NewModel(ps, func(g *Graph) (Outputs, error) {
				out := f(g, g.Param(p), g.Input("x"))
				return Outputs{Loss: projectLoss(g, out, 99)}, g.Err()
			}, 1)
			for range 2 {
				if _, err := m.Run(map[string]*tensor.Dense{"x": x}, mode); err != nil {
					t.Fatalf("%s %+v: %v", name, mode, err)
				}
			}
			if !equalFloats(before, p.Float64s()) {
				t.Errorf("%s %+v: the run modified the parameter: %v → %v", name, mode, before, p.Float64s())
			}
			if !equalFloats(xBefore, x.Data().([]float64)) {
				t.Errorf("%s %+v: the run modified the input tensor", name, mode)
			}
		}
	}
}

func TestModelInputErrors(t *testing.T) {
	m := newMLP(t, Float32)
	mod := m.model()
	_, err := mod.Forward(map[string]*tensor.Dense{"z": tensor.New(tensor.WithShape(2, 3), tensor.Of(Float32))})
	wantErrContains(t, "missing input", err, `"x"`)
	_, err = mod.Forward(map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(2, 3), tensor.Of(Float64))})
	wantErrContains(t, "wrong dtype", err, `"x"`, "float64", "float32")
	_, err = mod.Forward(map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(2, 4), tensor.Of(Float32))})
	wantErrContains(t, "wrong shape", err, "MatMul", "(2, 4)", "(3, 2)")
	_, err = mod.Forward(map[string]*tensor.Dense{"x": nil})
	wantErrContains(t, "nil input", err, `"x"`)
	// The model still works after errors.
	x, _ := inputOf(Float32, 2, rand.New(rand.NewPCG(1, 1)))
	if _, err := mod.ForwardBackward(map[string]*tensor.Dense{"x": x}); err != nil {
		t.Fatal(err)
	}
}

// TestModelGradientsReadInPlace checks the gradients Model reads from the graph's own
// buffers (not copies) where gorgonia shares and overwrites gradient buffers: two
// parameters whose gradient node is one and the same (Add passes the upstream gradient
// through to both), one of them also used elsewhere (its contributions summed by
// gorgonia's in-place adds), a bias used twice, and an input gradient. Finite
// differences in float64; two runs in a row give the same bits (the second must not see
// the first's buffers); whole and in 2 parts.
func TestModelGradientsReadInPlace(t *testing.T) {
	ps, err := NewParams(Float64, 7)
	if err != nil {
		t.Fatal(err)
	}
	var a, a2, b *Param
	for _, s := range []struct {
		p     **Param
		name  string
		shape []int
	}{{&a, "a", []int{4, 3}}, {&a2, "a2", []int{4, 3}}, {&b, "b", []int{3}}} {
		if *s.p, err = ps.Root().New(s.name, s.shape, Normal(0, 0.5)); err != nil {
			t.Fatal(err)
		}
	}
	mod := NewModel(ps, func(g *Graph) (Outputs, error) {
		x := g.Input("x")
		h := g.MatMul(x, g.Add(g.Param(a), g.Param(a2)))
		h2 := g.MatMul(x, g.Param(a))
		z := g.Add(g.AddBias(h, g.Param(b)), g.Tanh(g.AddBias(h2, g.Param(b))))
		loss := g.Add(g.Sum(g.Square(g.Tanh(z))), g.Sum(g.Mul(z, h)))
		return Outputs{Loss: loss, Batch: &Batch{Examples: x.Shape()[0], LossSum: true}}, g.Err()
	}, 1)
	rng := rand.New(rand.NewPCG(8, 9))
	in := map[string]*tensor.Dense{"x": randTensor(rng, 1, 6, 4)}
	for _, shards := range []int{1, 2} {
		if err := mod.SetShards(shards); err != nil {
			t.Fatal(err)
		}
		var first map[string][]float64
		for run := range 2 {
			ps.ZeroGrad()
			res, err := mod.Run(in, RunMode{Backward: true, InputGrads: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Parts != shards {
				t.Fatalf("shards %d: ran as %d parts", shards, res.Parts)
			}
			got := map[string][]float64{"input x": floats(res.InputGrads["x"])}
			for _, p := range ps.List() {
				got[p.Name()] = floats(p.Grad())
			}
			if run == 0 {
				first = got
				continue
			}
			for name, g := range got {
				for i := range g {
					if g[i] != first[name][i] {
						t.Fatalf("shards %d: gradient of %s[%d] is %v in the second run, %v in the first", shards, name, i, g[i], first[name][i])
					}
				}
			}
		}
		if worst, err := CheckGradients(mod, in, GradCheck{Inputs: true}); err != nil {
			t.Fatalf("shards %d: %v (worst %+v)", shards, err, worst)
		}
	}
}

// TestZeroGradThenBackward: ZeroGrad leaves the memory to the next backward pass, which
// writes the gradient instead of adding to what the memory held (a whole run copies, a
// run in parts clears first), and a parameter the graph does not read reads zero; a
// second pass without ZeroGrad still adds. Whole and in 2 parts, float32 and float64.
func TestZeroGradThenBackward(t *testing.T) {
	for _, dt := range []Dtype{Float32, Float64} {
		for _, shards := range []int{1, 2} {
			m := newSeqModel(t, dt)
			unused, err := m.ps.Root().New("unused", []int{3}, Normal(0, 1))
			if err != nil {
				t.Fatal(err)
			}
			mod := m.model(1)
			if err := mod.SetShards(shards); err != nil {
				t.Fatal(err)
			}
			in := seqInputs(dt, 4, 1)
			grads := func() map[string][]float64 {
				g := map[string][]float64{}
				for _, p := range m.ps.List() {
					g[p.Name()] = floats(p.Grad())
				}
				return g
			}
			backward := func() {
				t.Helper()
				res, err := mod.ForwardBackward(in)
				if err != nil {
					t.Fatal(err)
				}
				if res.Parts != shards {
					t.Fatalf("ran as %d parts, want %d", res.Parts, shards)
				}
			}
			m.ps.ZeroGrad()
			backward()
			want := grads()
			// Stale memory: the first pass's gradients, doubled by a second pass, and
			// something in the parameter no graph reads.
			backward()
			for i := range unused.Size() {
				if dt == Float32 {
					unused.GradFloat32s()[i] = 7
				} else {
					unused.GradFloat64s()[i] = 7
				}
			}
			m.ps.ZeroGrad()
			backward()
			got := grads()
			for name, w := range want {
				for i := range w {
					if got[name][i] != w[i] {
						t.Fatalf("%v, %d parts: %s grad[%d] = %g after ZeroGrad and one pass, want %g", dt, shards, name, i, got[name][i], w[i])
					}
				}
			}
			if g := unused.GradAt(1); g != 0 {
				t.Errorf("%v, %d parts: unread parameter's grad[1] = %g after ZeroGrad, want 0", dt, shards, g)
			}
			backward() // without ZeroGrad: adds
			for i, w := range want["w1"] {
				if g := m.w1.GradAt(i); math.Abs(g-2*w) > 1e-6*math.Abs(w) {
					t.Fatalf("%v, %d parts: w1 grad[%d] = %g after a second pass, want 2×%g", dt, shards, i, g, w)
				}
			}
		}
	}
}

// TestNoBackwardOpForUnneededGradients: a graph differentiated for its parameters only
// builds no backward op for an input's gradient (the first Linear layer's ∂L/∂x, a
// MSE's target) and gets the same parameter gradients, bit for bit, as one
// that also asks for the input gradients; that one still builds and returns them.
func TestNoBackwardOpForUnneededGradients(t *testing.T) {
	for _, dt := range []Dtype{Float32, Float64} {
		ps, err := NewParams(dt, 7)
		if err != nil {
			t.Fatal(err)
		}
		w1, _ := ps.Root().New("w1", []int{5, 4}, Normal(0, 1))
		b1, _ := ps.Root().New("b1", []int{5}, Normal(0, 1))
		w2, _ := ps.Root().New("w2", []int{5, 3}, Normal(0, 1))
		mod := NewModel(ps, func(g *Graph) (Outputs, error) {
			h := g.Tanh(g.Linear(g.Input("x"), g.Param(w1), g.Param(b1)))
			y := g.MatMul(h, g.Param(w2))
			return Outputs{Loss: g.MSE(y, g.Input("y"))}, g.Err()
		}, 1)
		if err := mod.SetShards(1); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		in := map[string]*tensor.Dense{"x": castTo(randTensor(rng, 1, 6, 4), dt), "y": castTo(randTensor(rng, 1, 6, 3), dt)}
		grads := func(mode RunMode) (map[string][]float64, *Result, int) {
			t.Helper()
			ps.ZeroGrad()
			res, err := mod.Run(in, mode)
			if err != nil {
				t.Fatal(err)
			}
			c, ok := mod.cache.get(mod.key)
			if !ok {
				t.Fatal("no compiled graph for the run's signature")
			}
			inputGradOps := 0
			for _, n := range c.g.eg.AllNodes() {
				if b, ok := n.Op().(*bwdOp); ok {
					// its children: the forward op's inputs, output and upstream gradient
					if ch := children(c.g.eg, n)[b.wrt]; ch == c.g.inputs["x"].n || ch == c.g.inputs["y"].n {
						inputGradOps++
					}
				}
			}
			g := map[string][]float64{}
			for _, p := range ps.List() {
				g[p.Name()] = floats(p.Grad())
			}
			return g, res, inputGradOps
		}
		params, _, n := grads(RunMode{Backward: true})
		if n != 0 {
			t.Errorf("%v: %d backward ops of an input's gradient built for the parameters' gradients, want 0", dt, n)
		}
		both, res, n := grads(RunMode{Backward: true, InputGrads: true})
		if n != 2 || res.InputGrads["x"] == nil || res.InputGrads["y"] == nil { // Linear's ∂/∂x, MSE's ∂/∂y
			t.Fatalf("%v: InputGrads built %d input-gradient ops (want 2) and returned %v", dt, n, res.InputGrads)
		}
		for name, want := range both {
			for i, w := range want {
				if params[name][i] != w {
					t.Fatalf("%v: %s grad[%d] = %g without the input gradients, %g with", dt, name, i, params[name][i], w)
				}
			}
		}
	}
}

// TestParamGradsInPlace: in a graph that runs whole, a Linear layer writes the gradient
// of a weight and bias that only it reads straight into the parameters' gradients, and
// adds into them when they are not zero; a weight that two layers read gets the sum of
// both as before. The gradients after one pass, and after a second pass without
// ZeroGrad, match the same model run as two parts (which adds every part's gradient
// after the run), to float round-off.
func TestParamGradsInPlace(t *testing.T) {
	for _, dt := range []Dtype{Float32, Float64} {
		ps, err := NewParams(dt, 11)
		if err != nil {
			t.Fatal(err)
		}
		w1, _ := ps.Root().New("w1", []int{5, 4}, Normal(0, 1))
		b1, _ := ps.Root().New("b1", []int{5}, Normal(0, 1))
		w2, _ := ps.Root().New("w2", []int{5, 5}, Normal(0, 1))
		w3, _ := ps.Root().New("w3", []int{3, 5}, Normal(0, 1))
		mod := NewModel(ps, func(g *Graph) (Outputs, error) {
			x := g.Input("x")
			h := g.Tanh(g.Linear(x, g.Param(w1), g.Param(b1)))
			h = g.Tanh(g.Linear(g.Tanh(g.Linear(h, g.Param(w2), nil)), g.Param(w2), nil)) // w2 read twice
			y := g.Linear(h, g.Param(w3), nil)
			return Outputs{Loss: g.MSE(y, g.Input("y")), Batch: &Batch{Examples: x.Shape()[0], LossItems: func(in map[string]*tensor.Dense) float64 {
				return float64(in["y"].Shape().TotalSize())
			}}}, g.Err()
		}, 1)
		rng := rand.New(rand.NewPCG(3, 4))
		in := map[string]*tensor.Dense{"x": castTo(randTensor(rng, 1, 6, 4), dt), "y": castTo(randTensor(rng, 1, 6, 3), dt)}
		run := func(shards int) [2]map[string][]float64 {
			t.Helper()
			if err := mod.SetShards(shards); err != nil {
				t.Fatal(err)
			}
			var out [2]map[string][]float64
			ps.ZeroGrad()
			for pass := range out {
				res, err := mod.ForwardBackward(in)
				if err != nil {
					t.Fatal(err)
				}
				if res.Parts != shards {
					t.Fatalf("ran as %d parts, want %d", res.Parts, shards)
				}
				out[pass] = map[string][]float64{}
				for _, p := range ps.List() {
					out[pass][p.Name()] = floats(p.Grad())
				}
			}
			return out
		}
		parts, whole := run(2), run(1)  // parts first: the whole run starts on stale memory
		c, ok := mod.cache.get(mod.key) // the whole run's graph
		if !ok {
			t.Fatal("no compiled graph for the whole run")
		}
		var inPlace []string
		for j, p := range c.g.order {
			if c.inPlace != nil && c.inPlace[j] {
				inPlace = append(inPlace, p.Name())
			}
		}
		if want := []string{"b1", "w1", "w3"}; !reflect.DeepEqual(sortedCopy(inPlace), want) {
			t.Errorf("%v: gradients written in place: %v, want %v", dt, inPlace, want)
		}
		tol := 1e-12
		if dt == Float32 {
			tol = 2e-6
		}
		for pass := range whole {
			for name, w := range parts[pass] {
				for i, v := range w {
					if d := math.Abs(whole[pass][name][i] - v); d > tol*math.Max(1, math.Abs(v)) {
						t.Fatalf("%v, pass %d: %s grad[%d] = %g whole, %g in parts", dt, pass+1, name, i, whole[pass][name][i], v)
					}
				}
			}
		}
		for i, v := range whole[0]["w1"] {
			if d := math.Abs(whole[1]["w1"][i] - 2*v); d > tol*math.Max(1, math.Abs(v)) {
				t.Fatalf("%v: w1 grad[%d] = %g after two passes, want 2×%g", dt, i, whole[1]["w1"][i], v)
			}
		}
	}
}

func sortedCopy(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}
