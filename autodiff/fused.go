package autodiff

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"runtime"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/locusml/locus/internal/par"
)

// fusedKernel is the numeric part of a fused op: shape rule, forward pass and hand-written
// backward pass. The generic fwdOp and bwdOp turn it into gorgonia ops.
//
// Contract: forward writes the whole output; backward(wrt) writes the whole gradient of
// input wrt into dst. Neither may keep references to in, out or gout after returning, and
// neither may write to in. State that backward needs beyond (in, out, gout) may be cached
// by forward in the kernel itself, provided it is never handed out as a Value.
type fusedKernel interface {
	opName() string
	// hashAttrs returns every attribute of the op, so that hash-consing never merges two
	// ops that compute different things.
	hashAttrs() string
	arity() int
	// diffWRT reports which inputs are differentiable.
	diffWRT() []bool
	// inputTypes gives, per input, whether it must have the graph's float dtype (true) or
	// is an integer tensor (false).
	floatInputs() []bool
	outShape(in []tensor.Shape) (tensor.Shape, error)
	forward(in []*tensor.Dense, out *tensor.Dense) error
	backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error
}

// applyFused checks the inputs and adds a fused op node to the graph.
func (g *Graph) applyFused(k fusedKernel, inputs ...*Node) *Node {
	if !g.ok(k.opName(), inputs...) {
		return nil
	}
	shapes := make([]tensor.Shape, len(inputs))
	floats := k.floatInputs()
	for i, n := range inputs {
		shapes[i] = n.n.Shape().Clone()
		want := floats[i]
		isFloat := n.Dtype() == Float32 || n.Dtype() == Float64
		if want && n.Dtype() != g.dtype {
			return g.failf("%s: input %d has dtype %v, want %v", k.opName(), i, n.Dtype(), g.dtype)
		}
		if !want && isFloat {
			return g.failf("%s: input %d has dtype %v, want an integer tensor", k.opName(), i, n.Dtype())
		}
	}
	outShape, err := k.outShape(shapes)
	if err != nil {
		return g.failf("%s: %v", k.opName(), err)
	}
	op := newFwdOp(k, shapes, outShape)
	op.id = g.nextID()
	children := make(G.Nodes, len(inputs))
	inGraph := false
	for i, n := range inputs {
		children[i] = n.n
		inGraph = inGraph || n.n.Graph() != nil
	}
	if !inGraph && len(children) > 0 {
		// Every input is a constant (ConstTensor, Const), which gorgonia keeps outside any
		// graph until an op joins it to one: an op of constants only would find no graph.
		children[0] = g.eg.AddNode(children[0])
	}
	out, err := G.ApplyOp(op, children...)
	if err != nil {
		return g.failf("%s: %v", k.opName(), err)
	}
	return g.wrap(out)
}

func typeOf(shape tensor.Shape, elem hm.Type) hm.Type {
	if shape.IsScalar() {
		return elem
	}
	return G.TensorType{Dims: shape.Dims(), Of: elem}
}

// fwdOp is the forward gorgonia op of a fused kernel.
type fwdOp struct {
	k        fusedKernel
	inShapes []tensor.Shape
	outShape tensor.Shape
	name     string
	floatIn  int   // index of the first float input, which gives the output dtype
	id       int64 // unique within its graph; used only by kernels that are not pure
	// noGrad marks the inputs whose gradient no requested gradient needs (set by
	// markNoGrad before the graph is differentiated): DiffWRT calls them not
	// differentiable and SymDiff adds no backward op for them, so that, say, the first
	// Linear layer of a model does not compute the gradient of its input.
	noGrad []bool
	out    *tensor.Dense
	ins    denseArgs
	scalar scalarOut
	dead   deadBufs
}

func newFwdOp(k fusedKernel, inShapes []tensor.Shape, outShape tensor.Shape) *fwdOp {
	op := &fwdOp{k: k, inShapes: inShapes, outShape: outShape, name: k.opName()}
	for i, f := range k.floatInputs() {
		if f {
			op.floatIn = i
			break
		}
	}
	return op
}

// identityGradKernel is implemented by kernels whose gradient with respect to some
// inputs is the upstream gradient itself (Add): SymDiff then passes the gradient node
// through, as gorgonia's own Add does, instead of adding an op that copies it.
type identityGradKernel interface {
	identityGrad(wrt int) bool
}

// denseArgs converts op inputs to dense tensors without allocating after the first run:
// the slice is reused, and scalar inputs are copied into cached 0-d tensors.
type denseArgs struct {
	out  []*tensor.Dense
	scal []*tensor.Dense
}

// scalarOut holds the reused gorgonia scalar that an op with a scalar result returns
// (gorgonia's scalar ops want a Scalar value, not a 0-d tensor).
type scalarOut struct {
	f32 *G.F32
	f64 *G.F64
}

func (s *scalarOut) value(t *tensor.Dense) G.Value {
	switch t.Dtype() {
	case Float32:
		if s.f32 == nil {
			s.f32 = new(G.F32)
		}
		*s.f32 = G.F32(t.Float32s()[0])
		return s.f32
	case Float64:
		if s.f64 == nil {
			s.f64 = new(G.F64)
		}
		*s.f64 = G.F64(t.Float64s()[0])
		return s.f64
	}
	return t
}

func (op *fwdOp) Arity() int { return op.k.arity() }

func (op *fwdOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	b := hm.TypeVariable('i') // not 'b': gorgonia's inferNodeType names the return type 'b'
	ts := make([]hm.Type, 0, len(op.inShapes)+1)
	floats := op.k.floatInputs()
	for i, s := range op.inShapes {
		if floats[i] {
			ts = append(ts, typeOf(s, a))
		} else {
			ts = append(ts, typeOf(s, b))
		}
	}
	ts = append(ts, typeOf(op.outShape, a))
	return hm.NewFnType(ts...)
}

func (op *fwdOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.outShape.Clone(), nil }
func (op *fwdOp) ReturnsPtr() bool                               { return false }
func (op *fwdOp) CallsExtern() bool                              { return false }
func (op *fwdOp) OverwritesInput() int                           { return -1 }
func (op *fwdOp) String() string                                 { return op.name + op.k.hashAttrs() }

func (op *fwdOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "locus.%s%s%v", op.k.opName(), op.k.hashAttrs(), op.inShapes)
	if _, impure := op.k.(impureKernel); impure {
		fmt.Fprintf(h, "#%d", op.id)
	}
}

func (op *fwdOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

func (op *fwdOp) Do(vals ...G.Value) (v G.Value, err error) {
	defer recoverOp(op.name, &err)
	in, err := op.ins.convert(op.name, vals, op.inShapes)
	if err != nil {
		return nil, err
	}
	dt := in[op.floatIn].Dtype()
	if op.out == nil || op.out.Dtype() != dt {
		op.out = newDense(dt, op.outShape)
	}
	poisonNaN(op.dead.before)
	if err := op.k.forward(in, op.out); err != nil {
		return nil, fmt.Errorf("%s: %w", op.name, err)
	}
	poisonNaN(op.dead.after)
	if op.outShape.IsScalar() {
		return op.scalar.value(op.out), nil
	}
	return op.out, nil
}

func (op *fwdOp) DiffWRT(int) []bool {
	diff := op.k.diffWRT()
	if op.noGrad == nil {
		return diff
	}
	d := make([]bool, len(diff))
	for i := range d {
		d[i] = diff[i] && !op.noGrad[i]
	}
	return d
}

func (op *fwdOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	diff := op.DiffWRT(len(inputs))
	ret := make(G.Nodes, len(inputs))
	id, _ := op.k.(identityGradKernel)
	for i := range inputs {
		if !diff[i] {
			continue
		}
		if id != nil && id.identityGrad(i) {
			ret[i] = grad
			continue
		}
		b := newBwdOp(op, i)
		children := append(append(G.Nodes{}, inputs...), output, grad)
		n, err := G.ApplyOp(b, children...)
		if err != nil {
			return nil, fmt.Errorf("%s backward: %w", op.k.opName(), err)
		}
		ret[i] = n
	}
	return ret, nil
}

// gradIntoKernel is implemented by kernels whose backward pass can also add the
// gradient into dst instead of overwriting it, so that the gradient of a parameter that
// only this op reads can be written straight into the parameter's gradient (bwdOp.into).
type gradIntoKernel interface {
	backwardInto(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense, accumulate bool) error
}

// gradReadsKernel is implemented by kernels whose backward pass reads only some of the
// forward values: gradReads(wrt) has one entry per input and a last one for the output,
// true where backward(wrt) may read that value's elements (its shape it may always read;
// the upstream gradient it always reads). A kernel that caches what one call computes
// for the next (the gradients of several inputs at once) declares, for every wrt, all
// that the first call of a pass reads. The buffer plan lets a value that no later op
// reads die early; in the package's tests bwdOp hands backward NaN in place of the
// values left out (poisonUnread), so a declaration that leaves out a value the kernel
// reads fails the op's gradient checks.
type gradReadsKernel interface {
	gradReads(wrt int) []bool
}

// reads returns the gradReads of a kernel of arity inputs that reads the values at idx
// (arity for the output).
func reads(arity int, idx ...int) []bool {
	r := make([]bool, arity+1)
	for _, i := range idx {
		r[i] = true
	}
	return r
}

// poisonUnread has bwdOp replace the forward values its kernel does not read
// (gradReadsKernel) with NaN, or with an id no table has, and has a buffer plan fill
// each buffer with NaN once the value in it is dead (poisonAt); the package's tests set
// it, so that a declaration or a plan that lets a value go too early shows.
var poisonUnread bool

// poisoned returns in and out with the values r leaves out replaced by tensors of their
// shapes full of NaN (or of ids that index nothing), made once per op.
func (op *bwdOp) poisoned(k gradReadsKernel, in []*tensor.Dense, out *tensor.Dense) ([]*tensor.Dense, *tensor.Dense) {
	if op.poison == nil {
		r := k.gradReads(op.wrt)
		op.poison = make([]*tensor.Dense, len(in)+1)
		op.poisonIn = make([]*tensor.Dense, len(in))
		for i, t := range append(append([]*tensor.Dense{}, in...), out) {
			if r[i] {
				continue
			}
			p := tensor.New(tensor.Of(t.Dtype()), tensor.WithShape(t.Shape().Clone()...))
			switch d := p.Data().(type) {
			case []float32:
				fillNaN(d)
			case []float64:
				fillNaN(d)
			case []int:
				for j := range d {
					d[j] = math.MinInt32
				}
			}
			op.poison[i] = p
		}
	}
	pin := op.poisonIn
	for i := range in {
		pin[i] = in[i]
		if op.poison[i] != nil {
			pin[i] = op.poison[i]
		}
	}
	if p := op.poison[len(in)]; p != nil {
		out = p
	}
	return pin, out
}

// impureKernel marks kernels (dropout) whose nodes must never be merged by hash-consing.
type impureKernel interface{ impure() }

// bwdOp computes the gradient of a fused op with respect to one input. Its inputs are the
// forward inputs, the forward output and the upstream gradient.
type bwdOp struct {
	fwd    *fwdOp
	wrt    int
	name   string
	shapes []tensor.Shape // of the inputs: the forward inputs, output and gradient
	dst    *tensor.Dense
	ins    denseArgs
	scalar scalarOut
	// poisonUnread's stand-ins, and the inputs it hands the kernel
	poison, poisonIn []*tensor.Dense
	dead             deadBufs
	// into, if set, is the parameter whose whole gradient this op computes (in a graph
	// that runs whole): Do writes it into the parameter's gradient, or adds it there
	// when the gradient is not zero, and returns that tensor (intoParams).
	into *Param
}

func newBwdOp(fwd *fwdOp, wrt int) *bwdOp {
	return &bwdOp{
		fwd:    fwd,
		wrt:    wrt,
		name:   fmt.Sprintf("%sGrad%d%s", fwd.name, wrt, fwd.k.hashAttrs()),
		shapes: append(append([]tensor.Shape{}, fwd.inShapes...), fwd.outShape, fwd.outShape),
	}
}

func (op *bwdOp) Arity() int { return op.fwd.k.arity() + 2 }

func (op *bwdOp) Type() hm.Type {
	ft := op.fwd.Type().(*hm.FunctionType)
	ts := ft.FlatTypes()
	ins := ts[:len(ts)-1]
	out := ts[len(ts)-1]
	all := append(append([]hm.Type{}, ins...), out, out, ins[op.wrt])
	return hm.NewFnType(all...)
}

func (op *bwdOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.fwd.inShapes[op.wrt].Clone(), nil
}
func (op *bwdOp) ReturnsPtr() bool     { return false }
func (op *bwdOp) CallsExtern() bool    { return false }
func (op *bwdOp) OverwritesInput() int { return -1 }
func (op *bwdOp) String() string       { return op.name }

func (op *bwdOp) WriteHash(h hash.Hash) {
	op.fwd.WriteHash(h)
	fmt.Fprintf(h, "/grad%d#%d", op.wrt, op.fwd.id)
}

func (op *bwdOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

func (op *bwdOp) Do(vals ...G.Value) (v G.Value, err error) {
	defer recoverOp(op.name, &err)
	n := op.fwd.k.arity()
	all, err := op.ins.convert(op.name, vals, op.shapes)
	if err != nil {
		return nil, err
	}
	in, out, gout := all[:n], all[n], all[n+1]
	if poisonUnread {
		if r, ok := op.fwd.k.(gradReadsKernel); ok {
			in, out = op.poisoned(r, in, out)
		}
	}
	if p := op.into; p != nil && p.grad.Dtype() == in[op.wrt].Dtype() {
		if err := op.fwd.k.(gradIntoKernel).backwardInto(op.wrt, in, out, gout, p.grad, !p.gradZero); err != nil {
			return nil, fmt.Errorf("%s: %w", op.name, err)
		}
		p.gradZero = false
		return p.grad, nil
	}
	if op.dst == nil || op.dst.Dtype() != in[op.wrt].Dtype() {
		op.dst = newDense(in[op.wrt].Dtype(), op.fwd.inShapes[op.wrt])
	}
	poisonNaN(op.dead.before)
	if err := op.fwd.k.backward(op.wrt, in, out, gout, op.dst); err != nil {
		return nil, fmt.Errorf("%s: %w", op.name, err)
	}
	poisonNaN(op.dead.after)
	if op.fwd.inShapes[op.wrt].IsScalar() {
		return op.scalar.value(op.dst), nil
	}
	return op.dst, nil
}

// convert converts op inputs to dense tensors and checks their shapes, so that a kernel
// never indexes out of range. The returned slice is valid until the next call.
func (a *denseArgs) convert(name string, vals []G.Value, shapes []tensor.Shape) ([]*tensor.Dense, error) {
	if len(vals) != len(shapes) {
		return nil, fmt.Errorf("%s: got %d inputs, want %d", name, len(vals), len(shapes))
	}
	if len(a.out) != len(vals) {
		a.out = make([]*tensor.Dense, len(vals))
		a.scal = make([]*tensor.Dense, len(vals))
	}
	out := a.out
	for i, v := range vals {
		switch t := v.(type) {
		case *tensor.Dense:
			out[i] = t
		case *G.F32:
			out[i] = a.scalar(i, Float32)
			out[i].Float32s()[0] = float32(*t)
		case *G.F64:
			out[i] = a.scalar(i, Float64)
			out[i].Float64s()[0] = float64(*t)
		case G.Scalar:
			out[i] = tensor.New(tensor.FromScalar(t.Data()))
		default:
			return nil, fmt.Errorf("%s: input %d is %T, want a dense tensor", name, i, v)
		}
		if !out[i].Shape().Eq(shapes[i]) && !(shapes[i].IsScalar() && out[i].Shape().TotalSize() == 1) {
			return nil, fmt.Errorf("%s: input %d has shape %v, want %v", name, i, out[i].Shape(), shapes[i])
		}
	}
	return out, nil
}

func (a *denseArgs) scalar(i int, dt Dtype) *tensor.Dense {
	if a.scal[i] == nil || a.scal[i].Dtype() != dt {
		a.scal[i] = newDense(dt, tensor.ScalarShape())
	}
	return a.scal[i]
}

// float is the element type of fused kernels.
type float interface{ ~float32 | ~float64 }

// parallelFor runs fn over [0, n) split into contiguous chunks on up to GOMAXPROCS
// goroutines (the internal/par pool). cost estimates the work per index in arbitrary units; small jobs run inline.
func parallelFor(n int, cost int, fn func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}
	if workers <= 1 || n*cost < 1<<14 {
		fn(0, n)
		return
	}
	par.For(n, (n+workers-1)/workers, fn)
}

// newDense allocates a zeroed tensor; a scalar shape gives a 0-dimensional tensor.
func newDense(dt Dtype, shape tensor.Shape) *tensor.Dense {
	if shape.IsScalar() {
		switch dt {
		case Float32:
			return tensor.New(tensor.FromScalar(float32(0)))
		case Float64:
			return tensor.New(tensor.FromScalar(float64(0)))
		}
	}
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.Of(dt))
}

// recoverOp turns a panic inside a kernel into the op's error: a panic inside an op
// would otherwise kill the process from gorgonia's machine goroutine.
func recoverOp(name string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: internal error: %v", name, r)
	}
}

// markNoGrad sets, on every fused op of eg, which inputs depend on none of wrt (through
// any path), so that differentiating with respect to wrt builds no backward op for them.
// The dependence is taken over every input of every op, differentiable or not: a
// superset, so no needed gradient is ever left out.
func markNoGrad(eg *G.ExprGraph, wrt G.Nodes) {
	needs := make(map[*G.Node]bool, len(wrt))
	for _, n := range wrt {
		needs[n] = true
	}
	var visit func(n *G.Node) bool
	visit = func(n *G.Node) bool {
		if v, ok := needs[n]; ok {
			return v
		}
		needs[n] = false // no cycles in a graph; set before the children for safety
		v := false
		for _, c := range children(eg, n) {
			if visit(c) {
				v = true
			}
		}
		needs[n] = v
		return v
	}
	for _, n := range eg.AllNodes() {
		op, ok := n.Op().(*fwdOp)
		if !ok {
			continue
		}
		cs := children(eg, n)
		var mask []bool
		for i, c := range cs {
			if !visit(c) {
				if mask == nil {
					mask = make([]bool, len(cs))
				}
				mask[i] = true
			}
		}
		op.noGrad = mask
	}
}

// children returns n's inputs in order (gorgonia exports them only as the graph's
// edges).
func children(eg *G.ExprGraph, n *G.Node) []*G.Node {
	it := eg.From(n.ID())
	var cs []*G.Node
	for it.Next() {
		cs = append(cs, it.Node().(*G.Node))
	}
	return cs
}
