package autodiff

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Graph is one expression graph under construction. Builders call its methods to add
// operations; the first error (a shape or dtype mismatch, naming the op and the shapes) is
// kept and every later call returns nil, so a builder checks g.Err() once at the end
// instead of after every operation. Graph methods never panic on bad shapes.
type Graph struct {
	eg    *G.ExprGraph
	dtype Dtype
	train bool
	err   error
	rng   *rand.Rand
	// usesRNG is set once an op draws from rng (Dropout)
	usesRNG bool
	ids     int64
	params  map[*Param]*Node
	order   []*Param
	inputs  map[string]*Node
	inOrd   []string
	// tapping is set for a graph built with RunMode.Taps; taps are its extra outputs.
	tapping bool
	taps    map[string]*Node
}

// Node is a value in a Graph: a tensor with a fixed shape and dtype.
type Node struct {
	n *G.Node
	g *Graph
}

// Shape returns a copy of the node's shape ([] for a scalar).
func (n *Node) Shape() []int {
	if n == nil {
		return nil
	}
	return append([]int(nil), n.n.Shape()...)
}

// Dims returns the number of dimensions.
func (n *Node) Dims() int {
	if n == nil {
		return 0
	}
	return n.n.Shape().Dims()
}

// Dtype returns the node's element type.
func (n *Node) Dtype() Dtype { return n.n.Dtype() }

// Graph returns the graph the node belongs to.
func (n *Node) Graph() *Graph { return n.g }

// String describes the node by its shape.
func (n *Node) String() string {
	if n == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%v%v", n.n.Dtype(), n.n.Shape())
}

func newGraph(dtype Dtype, train bool, rng *rand.Rand) *Graph {
	return &Graph{
		eg:     G.NewGraph(),
		dtype:  dtype,
		train:  train,
		rng:    rng,
		params: map[*Param]*Node{},
		inputs: map[string]*Node{},
	}
}

// NewGraph returns an empty graph of the given dtype, for building outside a Model (tests,
// tools). Most code gets its Graph from Model.
func NewGraph(dtype Dtype, train bool, seed uint64) *Graph {
	return newGraph(dtype, train, rand.New(rand.NewPCG(seed, 1)))
}

// Err returns the first error met while building, or nil.
func (g *Graph) Err() error { return g.err }

// Dtype returns the float dtype of the graph.
func (g *Graph) Dtype() Dtype { return g.dtype }

// Training reports whether the graph is built for training (dropout active).
func (g *Graph) Training() bool { return g.train }

// Fail records err (if it is the first error) and returns nil, for builders that validate
// their own arguments.
func (g *Graph) Fail(err error) *Node {
	if g.err == nil && err != nil {
		g.err = err
	}
	return nil
}

func (g *Graph) failf(format string, args ...any) *Node {
	return g.Fail(fmt.Errorf(format, args...))
}

func (g *Graph) nextID() int64 { g.ids++; return g.ids }

func (g *Graph) wrap(n *G.Node) *Node { return &Node{n: n, g: g} }

// ok reports whether an op may be added: no earlier error and no nil or foreign input.
func (g *Graph) ok(op string, inputs ...*Node) bool {
	if g.err != nil {
		return false
	}
	for i, n := range inputs {
		if n == nil {
			g.failf("%s: input %d is nil", op, i)
			return false
		}
		if n.g != g {
			g.failf("%s: input %d belongs to another graph", op, i)
			return false
		}
	}
	return true
}

func shapesOf(inputs []*Node) string {
	parts := make([]string, len(inputs))
	for i, n := range inputs {
		parts[i] = fmt.Sprint(n.n.Shape())
	}
	return strings.Join(parts, ", ")
}

// apply runs a gorgonia builder, turning its errors and panics into the graph's error.
func (g *Graph) apply(op string, f func() (*G.Node, error), inputs ...*Node) (out *Node) {
	if !g.ok(op, inputs...) {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			out = g.failf("%s(%s): %v", op, shapesOf(inputs), r)
		}
	}()
	n, err := f()
	if err != nil {
		return g.failf("%s(%s): %v", op, shapesOf(inputs), err)
	}
	return g.wrap(n)
}

// Param returns the node of p in this graph, creating it on first use. The parameter's
// value is bound to the node before every run.
func (g *Graph) Param(p *Param) *Node {
	if g.err != nil {
		return nil
	}
	if p == nil {
		return g.failf("param: nil parameter")
	}
	if n, ok := g.params[p]; ok {
		return n
	}
	if p.Dtype() != g.dtype {
		return g.failf("param %s: dtype %v, graph dtype %v", p.name, p.Dtype(), g.dtype)
	}
	gn := G.NewTensor(g.eg, g.dtype, p.value.Dims(), G.WithShape(p.value.Shape().Clone()...), G.WithName(p.name))
	n := g.wrap(gn)
	g.params[p] = n
	g.order = append(g.order, p)
	return n
}

// Input returns the graph input bound to name. Inputs are created by Model from the
// tensors passed to Run; asking for one that was not passed is an error that names it.
func (g *Graph) Input(name string) *Node {
	if g.err != nil {
		return nil
	}
	n, ok := g.inputs[name]
	if !ok {
		have := append([]string(nil), g.inOrd...)
		return g.failf("input %q was not provided (have %v)", name, have)
	}
	return n
}

// HasInput reports whether an input of that name was provided.
func (g *Graph) HasInput(name string) bool { _, ok := g.inputs[name]; return ok }

func (g *Graph) addInput(name string, dt Dtype, shape tensor.Shape) *Node {
	var gn *G.Node
	if shape.IsScalar() {
		gn = G.NewScalar(g.eg, dt, G.WithName("input."+name))
	} else {
		gn = G.NewTensor(g.eg, dt, shape.Dims(), G.WithShape(shape.Clone()...), G.WithName("input."+name))
	}
	n := g.wrap(gn)
	g.inputs[name] = n
	g.inOrd = append(g.inOrd, name)
	return n
}

// Const returns a scalar constant of the graph's dtype.
func (g *Graph) Const(v float64) *Node {
	if g.err != nil {
		return nil
	}
	if g.dtype == Float32 {
		return g.wrap(G.NewConstant(float32(v)))
	}
	return g.wrap(G.NewConstant(v))
}

// ConstTensor returns a constant tensor of the graph's dtype from row-major values.
func (g *Graph) ConstTensor(shape []int, vals []float64) *Node {
	if g.err != nil {
		return nil
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n != len(vals) || len(shape) == 0 {
		return g.failf("const tensor: %d values for shape %v", len(vals), shape)
	}
	var t *tensor.Dense
	if g.dtype == Float32 {
		f := make([]float32, len(vals))
		for i, v := range vals {
			f[i] = float32(v)
		}
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
	} else {
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), vals...)))
	}
	return g.wrap(G.NewConstant(t, G.WithName(fmt.Sprintf("const%d", g.nextID()))))
}

var errShape = errors.New("shape mismatch")

func (g *Graph) sameShape(op string, a, b *Node) bool {
	if !g.ok(op, a, b) {
		return false
	}
	if !slices.Equal(a.n.Shape(), b.n.Shape()) {
		g.failf("%s: %w: %v and %v", op, errShape, a.n.Shape(), b.n.Shape())
		return false
	}
	return true
}

// Add returns a + b (same shapes).
func (g *Graph) Add(a, b *Node) *Node {
	if !g.sameShape("Add", a, b) {
		return nil
	}
	return g.applyFused(binaryKernel{binAdd}, a, b)
}

// Sub returns a − b (same shapes).
func (g *Graph) Sub(a, b *Node) *Node {
	if !g.sameShape("Sub", a, b) {
		return nil
	}
	return g.applyFused(binaryKernel{binSub}, a, b)
}

// Mul returns the elementwise product a ⊙ b (same shapes).
func (g *Graph) Mul(a, b *Node) *Node {
	if !g.sameShape("Mul", a, b) {
		return nil
	}
	return g.applyFused(binaryKernel{binMul}, a, b)
}

// Div returns the elementwise quotient a / b (same shapes).
func (g *Graph) Div(a, b *Node) *Node {
	if !g.sameShape("Div", a, b) {
		return nil
	}
	return g.applyFused(binaryKernel{binDiv}, a, b)
}

// Scale returns c·x for a constant c.
func (g *Graph) Scale(x *Node, c float64) *Node {
	if !g.ok("Scale", x) {
		return nil
	}
	return g.applyFused(constKernel{name: "Scale", mul: true, c: c}, x)
}

// AddConst returns x + c for a constant c.
func (g *Graph) AddConst(x *Node, c float64) *Node {
	if !g.ok("AddConst", x) {
		return nil
	}
	return g.applyFused(constKernel{name: "AddConst", c: c}, x)
}

// MulScalar returns s·x for a scalar node s (shape [] or [1]).
func (g *Graph) MulScalar(x, s *Node) *Node {
	if !g.ok("MulScalar", x, s) {
		return nil
	}
	if s.n.Shape().TotalSize() != 1 {
		return g.failf("MulScalar: scalar has shape %v", s.n.Shape())
	}
	return g.applyFused(mulScalarKernel{}, x, s)
}

func (g *Graph) unary(op string, x *Node, f func(*G.Node) (*G.Node, error)) *Node {
	return g.apply(op, func() (*G.Node, error) { return f(x.n) }, x)
}

// Neg returns −x.
func (g *Graph) Neg(x *Node) *Node {
	if !g.ok("Neg", x) {
		return nil
	}
	return g.applyFused(constKernel{name: "Neg", mul: true, c: -1}, x)
}

// Exp returns exp(x) elementwise.
func (g *Graph) Exp(x *Node) *Node { return g.unary("Exp", x, G.Exp) }

// Log returns log(x) elementwise.
func (g *Graph) Log(x *Node) *Node { return g.unary("Log", x, G.Log) }

// Tanh returns tanh(x) elementwise.
func (g *Graph) Tanh(x *Node) *Node { return g.unary("Tanh", x, G.Tanh) }

// Sigmoid returns 1/(1+exp(−x)) elementwise.
func (g *Graph) Sigmoid(x *Node) *Node {
	if !g.ok("Sigmoid", x) {
		return nil
	}
	return g.applyFused(newSigmoidKernel(), x)
}

// ReLU returns max(x, 0) elementwise.
func (g *Graph) ReLU(x *Node) *Node {
	if !g.ok("ReLU", x) {
		return nil
	}
	return g.applyFused(newReLUKernel(), x)
}

// Square returns x² elementwise.
func (g *Graph) Square(x *Node) *Node { return g.unary("Square", x, G.Square) }

// Sqrt returns √x elementwise.
func (g *Graph) Sqrt(x *Node) *Node { return g.unary("Sqrt", x, G.Sqrt) }

// Abs returns |x| elementwise.
func (g *Graph) Abs(x *Node) *Node { return g.unary("Abs", x, G.Abs) }

// MatMul returns the matrix product of 2-D a [m, k] and b [k, n].
func (g *Graph) MatMul(a, b *Node) *Node {
	if !g.ok("MatMul", a, b) {
		return nil
	}
	as, bs := a.n.Shape(), b.n.Shape()
	if as.Dims() != 2 || bs.Dims() != 2 || as[1] != bs[0] {
		return g.failf("MatMul: cannot multiply %v by %v", as, bs)
	}
	return g.applyFused(&matmulKernel{}, a, b)
}

// BatchedMatMul multiplies 3-D a [B, m, k] by b [B, k, n] batch by batch; transA and
// transB transpose the last two axes of a and b first.
func (g *Graph) BatchedMatMul(a, b *Node, transA, transB bool) *Node {
	if !g.ok("BatchedMatMul", a, b) {
		return nil
	}
	as, bs := a.n.Shape(), b.n.Shape()
	if as.Dims() != 3 || bs.Dims() != 3 || as[0] != bs[0] {
		return g.failf("BatchedMatMul: shapes %v and %v (want [B,m,k] and [B,k,n])", as, bs)
	}
	k1, k2 := as[2], bs[1]
	if transA {
		k1 = as[1]
	}
	if transB {
		k2 = bs[2]
	}
	if k1 != k2 {
		return g.failf("BatchedMatMul: inner dimensions differ: %v (transA=%v) and %v (transB=%v)", as, transA, bs, transB)
	}
	return g.applyFused(&matmulKernel{batched: true, transA: transA, transB: transB}, a, b)
}

// Sum sums x over the given axes (all axes if none), dropping them.
func (g *Graph) Sum(x *Node, axes ...int) *Node {
	if !g.ok("Sum", x) || !g.validAxes("Sum", x, axes) {
		return nil
	}
	return g.applyFused(newReduceKernel(false, x.n.Shape(), axes), x)
}

// Mean averages x over the given axes (all axes if none), dropping them.
func (g *Graph) Mean(x *Node, axes ...int) *Node {
	if !g.ok("Mean", x) || !g.validAxes("Mean", x, axes) {
		return nil
	}
	return g.applyFused(newReduceKernel(true, x.n.Shape(), axes), x)
}

func (g *Graph) validAxes(op string, x *Node, axes []int) bool {
	seen := map[int]bool{}
	for _, a := range axes {
		if a < 0 || a >= x.Dims() || seen[a] {
			g.failf("%s: invalid axes %v for shape %v", op, axes, x.n.Shape())
			return false
		}
		seen[a] = true
	}
	return true
}

// Reshape returns x with a new shape of the same size; nil or [] makes a scalar.
func (g *Graph) Reshape(x *Node, shape []int) *Node {
	if !g.ok("Reshape", x) {
		return nil
	}
	n := 1
	for _, d := range shape {
		if d <= 0 {
			return g.failf("Reshape: invalid shape %v", shape)
		}
		n *= d
	}
	if n != x.n.Shape().TotalSize() {
		return g.failf("Reshape: cannot reshape %v to %v", x.n.Shape(), shape)
	}
	if slices.Equal(x.n.Shape(), shape) {
		return x
	}
	if x.Dtype() != g.dtype {
		return g.failf("Reshape: %v tensor %v: only float tensors can be reshaped in a graph; reshape integer inputs before Run", x.Dtype(), x.n.Shape())
	}
	// gorgonia's Reshape aliases its input, and an in-place op downstream then writes
	// through it into a parameter or an input: copy instead.
	return g.applyFused(reshapeKernel{to: tensor.Shape(append([]int(nil), shape...))}, x)
}

// Transpose permutes the axes of x.
func (g *Graph) Transpose(x *Node, axes ...int) *Node {
	if !g.ok("Transpose", x) {
		return nil
	}
	if len(axes) != x.Dims() {
		return g.failf("Transpose: axes %v for shape %v", axes, x.n.Shape())
	}
	seen := make([]bool, len(axes))
	for _, a := range axes {
		if a < 0 || a >= len(axes) || seen[a] {
			return g.failf("Transpose: axes %v is not a permutation", axes)
		}
		seen[a] = true
	}
	if x.Dtype() != g.dtype {
		return g.apply("Transpose", func() (*G.Node, error) { return G.Transpose(x.n, axes...) }, x)
	}
	return g.applyFused(newTransposeKernel(x.n.Shape(), axes), x)
}

// Slice takes x[lo:hi] along axis, keeping the axis.
func (g *Graph) Slice(x *Node, axis, lo, hi int) *Node {
	if !g.ok("Slice", x) {
		return nil
	}
	s := x.n.Shape()
	if axis < 0 || axis >= s.Dims() || lo < 0 || hi > s[axis] || lo >= hi {
		return g.failf("Slice: [%d:%d] along axis %d of %v", lo, hi, axis, s)
	}
	if x.Dtype() == g.dtype {
		return g.applyFused(newSliceKernel(s, axis, lo, hi), x)
	}
	sl := make([]tensor.Slice, s.Dims())
	sl[axis] = G.S(lo, hi)
	out := g.apply("Slice", func() (*G.Node, error) { return G.Slice(x.n, sl...) }, x)
	if out != nil && hi-lo == 1 {
		// gorgonia drops a size-1 sliced axis; put it back.
		want := s.Clone()
		want[axis] = 1
		out = g.Reshape(out, want)
	}
	return out
}

// Concat joins nodes along axis; all other dimensions must agree.
func (g *Graph) Concat(axis int, xs ...*Node) *Node {
	if !g.ok("Concat", xs...) {
		return nil
	}
	if len(xs) == 0 {
		return g.failf("Concat: no inputs")
	}
	if len(xs) == 1 {
		return xs[0]
	}
	s0 := xs[0].n.Shape()
	if axis < 0 || axis >= s0.Dims() {
		return g.failf("Concat: axis %d for %v", axis, s0)
	}
	ns := make([]*G.Node, len(xs))
	for i, x := range xs {
		s := x.n.Shape()
		if s.Dims() != s0.Dims() {
			return g.failf("Concat: shapes %s", shapesOf(xs))
		}
		for d := range s {
			if d != axis && s[d] != s0[d] {
				return g.failf("Concat: shapes %s differ outside axis %d", shapesOf(xs), axis)
			}
		}
		ns[i] = x.n
	}
	if allDtype(xs, g.dtype) {
		return g.applyFused(newConcatKernel(concatShapes(xs), axis), xs...)
	}
	return g.apply("Concat", func() (*G.Node, error) { return G.Concat(axis, ns...) }, xs...)
}

// Gather returns rows of the 2-D table selected by the integer tensor ids, read in
// row-major order: out[i] = table[ids[i]], shape [number of ids, table columns]. Its
// gradient scatters into the table (an embedding lookup). ids may have any rank, so
// integer tensors never need a Reshape (gorgonia cannot type a reshaped int node).
func (g *Graph) Gather(table, ids *Node) *Node {
	if !g.ok("Gather", table, ids) {
		return nil
	}
	if table.Dims() != 2 || ids.Dims() < 1 {
		return g.failf("Gather: table %v and ids %v (want a 2-D table and non-scalar ids)", table.n.Shape(), ids.n.Shape())
	}
	if ids.Dtype() != tensor.Int {
		return g.failf("Gather: ids have dtype %v, want int", ids.Dtype())
	}
	return g.applyFused(&gatherKernel{}, table, ids)
}
