package autodiff

import (
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// strides returns the row-major strides of shape.
func stridesOf(shape []int) []int {
	s := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = n
		n *= shape[i]
	}
	return s
}

// refReduce sums (or averages) x over axes (all if none) by visiting every coordinate.
func refReduce(x []float64, shape, axes []int, mean bool) []float64 {
	red := make([]bool, len(shape))
	for _, a := range axes {
		red[a] = true
	}
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
	}
	var outShape []int
	for i, d := range shape {
		if !red[i] {
			outShape = append(outShape, d)
		}
	}
	os := stridesOf(outShape)
	outN := 1
	for _, d := range outShape {
		outN *= d
	}
	out := make([]float64, outN)
	for i, v := range x {
		c := flatCoords(tensor.Shape(shape), i)
		o, k := 0, 0
		for d, cd := range c {
			if !red[d] {
				o += cd * os[k]
				k++
			}
		}
		out[o] += v
	}
	if mean {
		for i := range out {
			out[i] /= float64(len(x) / outN)
		}
	}
	return out
}

func refTranspose(x []float64, shape, perm []int) []float64 {
	is := stridesOf(shape)
	outShape := make([]int, len(perm))
	for i, a := range perm {
		outShape[i] = shape[a]
	}
	out := make([]float64, len(x))
	for j := range out {
		c := flatCoords(tensor.Shape(outShape), j)
		off := 0
		for i, a := range perm {
			off += c[i] * is[a]
		}
		out[j] = x[off]
	}
	return out
}

func refSlice(x []float64, shape []int, axis, lo, hi int) []float64 {
	var out []float64
	for i, v := range x {
		if c := flatCoords(tensor.Shape(shape), i); c[axis] >= lo && c[axis] < hi {
			out = append(out, v)
		}
	}
	return out
}

func TestFusedBasicOpValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 2))
	for _, s := range [][]int{{2, 3, 4}, {3, 1, 5}, {2, 3, 1, 4}} {
		x := f32Round(randTensor(rng, 1, s...)) // as checkBothDtypes does
		xv := floats(x)
		one := map[string]*tensor.Dense{"a": x}
		var axesSets [][]int
		for mask := 0; mask < 1<<len(s); mask++ {
			var axes []int
			for a := range s {
				if mask&(1<<a) != 0 {
					axes = append(axes, a)
				}
			}
			axesSets = append(axesSets, axes)
		}
		for _, axes := range axesSets {
			for _, mean := range []bool{false, true} {
				want := refReduce(xv, s, axes, mean)
				checkBothDtypes(t, "reduce", one, nil, func(g *Graph, p map[string]*Node) *Node {
					if mean {
						return g.Mean(p["a"], axes...)
					}
					return g.Sum(p["a"], axes...)
				}, want)
			}
		}
		perm := make([]int, len(s))
		for i := range perm {
			perm[i] = i
		}
		for range 6 {
			rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			p := slices.Clone(perm)
			checkBothDtypes(t, "transpose", one, nil, func(g *Graph, n map[string]*Node) *Node { return g.Transpose(n["a"], p...) }, refTranspose(xv, s, p))
		}
		for axis, d := range s {
			for lo := 0; lo < d; lo++ {
				for hi := lo + 1; hi <= d; hi++ {
					checkBothDtypes(t, "slice", one, nil, func(g *Graph, n map[string]*Node) *Node { return g.Slice(n["a"], axis, lo, hi) },
						refSlice(xv, s, axis, lo, hi))
				}
			}
		}
	}
	a, b := denseOf([]int{2, 2}, 1, -2, 3, 0.5), denseOf([]int{2, 2}, 4, 0.25, -1, 2)
	two := map[string]*tensor.Dense{"a": a, "b": b}
	for _, tc := range []struct {
		name string
		f    func(g *Graph, p map[string]*Node) *Node
		want []float64
	}{
		{"Add", func(g *Graph, p map[string]*Node) *Node { return g.Add(p["a"], p["b"]) }, []float64{5, -1.75, 2, 2.5}},
		{"Sub", func(g *Graph, p map[string]*Node) *Node { return g.Sub(p["a"], p["b"]) }, []float64{-3, -2.25, 4, -1.5}},
		{"Mul", func(g *Graph, p map[string]*Node) *Node { return g.Mul(p["a"], p["b"]) }, []float64{4, -0.5, -3, 1}},
		{"Div", func(g *Graph, p map[string]*Node) *Node { return g.Div(p["a"], p["b"]) }, []float64{0.25, -8, -3, 0.25}},
		{"Scale", func(g *Graph, p map[string]*Node) *Node { return g.Scale(p["a"], -2) }, []float64{-2, 4, -6, -1}},
		{"AddConst", func(g *Graph, p map[string]*Node) *Node { return g.AddConst(p["a"], 1.5) }, []float64{2.5, -0.5, 4.5, 2}},
		{"Neg", func(g *Graph, p map[string]*Node) *Node { return g.Neg(p["a"]) }, []float64{-1, 2, -3, -0.5}},
		{"MulScalar", func(g *Graph, p map[string]*Node) *Node {
			return g.MulScalar(p["a"], g.Slice(g.Reshape(p["b"], []int{4}), 0, 1, 2))
		},
			[]float64{0.25, -0.5, 0.75, 0.125}},
	} {
		checkBothDtypes(t, tc.name, two, nil, tc.f, tc.want)
	}
}

func TestFusedBasicOpGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 3))
	r := func(shape ...int) *tensor.Dense { return randTensor(rng, 1, shape...) }
	one := func(a *tensor.Dense) map[string]*tensor.Dense { return map[string]*tensor.Dense{"a": a} }
	two := func(a, b *tensor.Dense) map[string]*tensor.Dense { return map[string]*tensor.Dense{"a": a, "b": b} }
	cases := []opCase{
		{"Transpose 4d", one(r(2, 3, 4, 2)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Transpose(p["a"], 0, 2, 1, 3) }},
		{"Transpose size1", one(r(2, 1, 3)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Transpose(p["a"], 2, 1, 0) }},
		{"Transpose identity", one(r(2, 3)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Transpose(p["a"], 0, 1) }},
		{"Mean 0,2", one(r(2, 3, 4)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Mean(p["a"], 0, 2) }},
		{"Sum 1,2", one(r(2, 3, 4)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Sum(p["a"], 2, 1) }},
		{"Sum every axis", one(r(2, 3)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Sum(p["a"], 0, 1) }},
		{"Mean of a sum", one(r(3, 2)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Mean(g.Scale(g.Sum(p["a"]), 2)) }},
		{"Slice 3d middle", one(r(2, 5, 3)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Slice(p["a"], 1, 1, 4) }},
		{"MulScalar []", two(r(2, 3), r(1)), nil, func(g *Graph, p map[string]*Node) *Node {
			return g.MulScalar(p["a"], g.Reshape(p["b"], nil))
		}},
		{"scalar arithmetic", two(r(1), r(1)), nil, func(g *Graph, p map[string]*Node) *Node {
			a, b := g.Reshape(p["a"], nil), g.Reshape(p["b"], nil)
			return g.Div(g.Mul(g.Add(a, b), g.Sub(a, b)), g.AddConst(g.Mul(b, b), 1))
		}},
		// nodes with several consumers: gorgonia adds up their gradients, also where an
		// Add passes the upstream gradient through
		{"Add same", one(r(3, 2)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Add(p["a"], p["a"]) }},
		{"Sub same", one(r(3, 2)), nil, func(g *Graph, p map[string]*Node) *Node { return g.Sub(p["a"], p["a"]) }},
		{"residual", two(r(3, 2), r(3, 2)), nil, func(g *Graph, p map[string]*Node) *Node {
			h := g.Add(p["a"], g.Mul(p["a"], p["b"]))
			h = g.Add(h, g.Tanh(h))
			return g.Sub(g.Add(h, p["b"]), g.Scale(h, 0.5))
		}},
		{"Add chain", two(r(4), r(4)), nil, func(g *Graph, p map[string]*Node) *Node {
			return g.Add(g.Add(g.Add(p["a"], p["b"]), p["b"]), g.AddConst(p["a"], 1))
		}},
	}
	for _, c := range cases {
		checkOp(t, c.name, c.params, c.inputs, c.f, tol)
	}
	// The loss itself an Add: the upstream gradient is gorgonia's constant 1, passed
	// through to both parameters; run twice, it must stay 1.
	ps, _ := NewParams(Float64, 1)
	pa, _ := ps.Root().New("a", []int{1}, Zeros())
	pb, _ := ps.Root().New("b", []int{1}, Zeros())
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		return Outputs{Loss: g.Add(g.Add(g.Reshape(g.Param(pa), nil), g.Reshape(g.Param(pb), nil)), g.Reshape(g.Param(pa), nil))}, g.Err()
	}, 1)
	for range 3 {
		ps.ZeroGrad()
		if _, err := m.ForwardBackward(nil); err != nil {
			t.Fatal(err)
		}
		checkValues(t, "grad a", pa.GradFloat64s(), []float64{2}, 0, 0)
		checkValues(t, "grad b", pb.GradFloat64s(), []float64{1}, 0, 0)
	}
}

func TestFusedBasicOpsFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 4))
	r := func(shape ...int) *tensor.Dense { return randTensor(rng, 1, shape...) }
	pos := func(shape ...int) *tensor.Dense { return positive(rng, shape...) }
	// 40·1000 elements: past serialBelow and the chunk of the parallel sum.
	for _, s := range [][]int{{3, 5}, {40, 1000}} {
		for _, tc := range []struct {
			name   string
			params map[string]*tensor.Dense
			f      func(g *Graph, p map[string]*Node) *Node
		}{
			{"Add", map[string]*tensor.Dense{"a": r(s...), "b": r(s...)}, func(g *Graph, p map[string]*Node) *Node { return g.Add(p["a"], g.Mul(p["a"], p["b"])) }},
			{"Sub", map[string]*tensor.Dense{"a": r(s...), "b": r(s...)}, func(g *Graph, p map[string]*Node) *Node { return g.Sub(p["a"], p["b"]) }},
			{"Div", map[string]*tensor.Dense{"a": r(s...), "b": pos(s...)}, func(g *Graph, p map[string]*Node) *Node { return g.Div(p["a"], p["b"]) }},
			{"Scale", map[string]*tensor.Dense{"a": r(s...)}, func(g *Graph, p map[string]*Node) *Node { return g.AddConst(g.Scale(p["a"], 0.3), -1) }},
			{"MulScalar", map[string]*tensor.Dense{"a": r(s...), "b": r(1)}, func(g *Graph, p map[string]*Node) *Node { return g.MulScalar(p["a"], p["b"]) }},
			{"Sum", map[string]*tensor.Dense{"a": r(s...)}, func(g *Graph, p map[string]*Node) *Node { return g.Scale(g.Sum(g.Tanh(p["a"])), 1e-3) }},
			{"Mean axis", map[string]*tensor.Dense{"a": r(s...)}, func(g *Graph, p map[string]*Node) *Node { return g.Mean(p["a"], 0) }},
			{"Sum axis", map[string]*tensor.Dense{"a": r(s...)}, func(g *Graph, p map[string]*Node) *Node { return g.Sum(p["a"], 1) }},
			{"Transpose", map[string]*tensor.Dense{"a": r(s...)}, func(g *Graph, p map[string]*Node) *Node { return g.Transpose(p["a"], 1, 0) }},
			{"Slice", map[string]*tensor.Dense{"a": r(s...)}, func(g *Graph, p map[string]*Node) *Node { return g.Slice(p["a"], 1, 1, s[1]-1) }},
		} {
			checkFloat32(t, tc.name, tc.params, tc.f)
		}
	}
}

// TestFusedBasicOpsDoNotAllocate checks that the kernels' Do reuses its buffers: after
// the first run, forward and backward allocate nothing (tensors below serialBelow run
// inline).
func TestFusedBasicOpsDoNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 5))
	s := tensor.Shape{2, 3, 4}
	f32 := func(shape tensor.Shape) *tensor.Dense {
		d := castTo(randTensor(rng, 1, shape...), Float32)
		return d
	}
	scalar := G.NewF32(1.5)
	for _, tc := range []struct {
		k  fusedKernel
		in []G.Value
	}{
		{binaryKernel{binAdd}, []G.Value{f32(s), f32(s)}},
		{binaryKernel{binDiv}, []G.Value{f32(s), f32(s)}},
		{constKernel{name: "Scale", mul: true, c: 2}, []G.Value{f32(s)}},
		{mulScalarKernel{}, []G.Value{f32(s), scalar}},
		{newReduceKernel(false, s, nil), []G.Value{f32(s)}},
		{newReduceKernel(true, s, []int{0, 2}), []G.Value{f32(s)}},
		{newTransposeKernel(s, []int{2, 0, 1}), []G.Value{f32(s)}},
		{newSliceKernel(s, 1, 1, 3), []G.Value{f32(s)}},
	} {
		shapes := make([]tensor.Shape, len(tc.in))
		for i, v := range tc.in {
			shapes[i] = v.Shape()
		}
		outShape, err := tc.k.outShape(shapes)
		if err != nil {
			t.Fatal(err)
		}
		fwd := newFwdOp(tc.k, shapes, outShape)
		out, err := fwd.Do(tc.in...)
		if err != nil {
			t.Fatalf("%s: %v", fwd.name, err)
		}
		var g G.Value = out
		if !outShape.IsScalar() {
			g = f32(outShape)
		}
		bargs := append(append([]G.Value{}, tc.in...), out, g)
		for wrt := range tc.in {
			b := newBwdOp(fwd, wrt)
			if allocs := testing.AllocsPerRun(10, func() {
				if _, err := fwd.Do(tc.in...); err != nil {
					t.Fatal(err)
				}
				if _, err := b.Do(bargs...); err != nil {
					t.Fatal(err)
				}
			}); allocs != 0 {
				t.Errorf("%s (wrt %d): %v allocations per run, want 0", b.name, wrt, allocs)
			}
		}
	}
}
