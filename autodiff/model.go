package autodiff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/vmath"
	"github.com/locusml/locus/internal/par"
)

// Outputs is what a Builder returns: an optional scalar loss and named output nodes.
type Outputs struct {
	Loss   *Node
	Values map[string]*Node
	// Batch, if set, declares the graph's examples independent and says how its loss
	// combines over parts of the batch, so that Model can run a batch as parts on
	// several cores at once (see Batch). Nil: every batch runs whole; a builder
	// declares Batch for all its graphs or for none (after one graph without it, the
	// Model runs every batch whole).
	Batch *Batch
}

// Builder builds the model's computation into g, reading inputs with g.Input(name) and
// parameters with g.Param(p). It is called once per distinct input signature (names,
// shapes, dtypes, mode), so it must depend only on those and on the model's
// configuration.
type Builder func(g *Graph) (Outputs, error)

// Model runs a Builder's graph on concrete inputs. It hides gorgonia's lifecycle: it
// compiles one graph and one machine per input signature (so a last partial batch or a
// different sequence length just works; the most recently used are kept, within a
// budget of graph values), binds parameters and inputs, resets the machine,
// copies results out before the backward pass can clobber them, and adds gradients into
// each Param's gradient.
//
// A batch whose builder declares Batch runs as parts on several cores at once
// (SetShards).
//
// A Model is not safe for concurrent use.
type Model struct {
	params *Params
	build  Builder
	rng    *rand.Rand
	pcg    *rand.PCG
	cache  signatureCache[*compiled]
	shards int                        // SetShards
	plans  signatureCache[*shardPlan] // by input signature, for runs as parts
	// undeclared is set once a graph of the builder declared no Batch: later signatures
	// run whole without building a part to find out again
	undeclared bool
	// scratch of signature, reused so that a Run with a known signature does not allocate
	names []string
	key   []byte
}

// NewModel returns a model over params built by build. seed drives dropout masks.
func NewModel(params *Params, build Builder, seed uint64) *Model {
	pcg := rand.NewPCG(seed, 0xda3e39cb94b95bdb)
	return &Model{params: params, build: build, pcg: pcg, rng: rand.New(pcg), cache: newSignatureCache[*compiled](), plans: newSignatureCache[*shardPlan]()}
}

// Params returns the model's parameter registry.
func (m *Model) Params() *Params { return m.params }

// RNGState returns the state of the model's dropout generator, for checkpoints.
func (m *Model) RNGState() ([]byte, error) { return m.pcg.MarshalBinary() }

// SetRNGState restores a state returned by RNGState.
func (m *Model) SetRNGState(b []byte) error { return m.pcg.UnmarshalBinary(b) }

// RunMode says what Run computes.
type RunMode struct {
	// Train builds the graph in training mode (dropout active).
	Train bool
	// Backward computes gradients of the loss and adds them into each parameter's Grad.
	Backward bool
	// InputGrads also returns the gradient of the loss with respect to every float input.
	InputGrads bool
	// Taps builds the graph with taps (Graph.Tap) and returns their values in
	// Result.Taps: what layers show of their insides, such as local-mean weights.
	Taps bool
	// LossOnly leaves the builder's named outputs out of the run (Result.Values is
	// empty): a training step that needs only the loss and the gradients neither keeps
	// them to the end of the run nor gathers and copies them (charlm's logits at T =
	// 4096, batch 8: 33 MB held for nothing).
	LossOnly bool
}

// Result holds the values of one run. Its tensors, and its Values and InputGrads maps,
// belong to the model and are overwritten by the next Run with the same input signature:
// Clone what you keep.
type Result struct {
	Loss       float64
	HasLoss    bool
	Values     map[string]*tensor.Dense
	InputGrads map[string]*tensor.Dense
	// Taps holds the values tapped by the graph (Graph.Tap) when run with RunMode.Taps.
	Taps map[string]*tensor.Dense
	// Parts is the number of parts of the batch the run computed at once (SetShards):
	// 1 for a batch run whole.
	Parts int
}

type compiled struct {
	g      *Graph
	vm     G.VM
	loss   *G.Value
	values map[string]*G.Value
	// The gradient nodes of the parameters (aligned with g.order) and of the float
	// inputs. They are read in place after RunAll, not copied out by gorgonia's Read:
	// gorgonia keeps the register of a derivative of an input (a parameter or an input
	// node) live to the end of the program, so no later instruction writes into it, and
	// the value stays the op's own buffer until the next run.
	paramGrads []*G.Node
	// inPlace marks the parameters whose gradient op writes into the parameter's
	// gradient itself (intoParams): nothing is added after the run.
	inPlace []bool
	// planned is set once planBuffers has run; plan says what it shared, and
	// allocPlan, until the first run calls it, makes the plan's buffers
	planned    bool
	plan       planStats
	allocPlan  func()
	inputGrads map[string]*G.Node
	taps       map[string]*G.Value
	batch      *Batch // Outputs.Batch
	// reused by every run
	outValues     map[string]*tensor.Dense
	outInputGrads map[string]*tensor.Dense
	outTaps       map[string]*tensor.Dense
}

// Forward runs the model in evaluation mode without gradients.
func (m *Model) Forward(inputs map[string]*tensor.Dense) (*Result, error) {
	return m.Run(inputs, RunMode{})
}

// ForwardBackward runs the model in training mode and adds the loss gradient into every
// parameter's Grad (call Params.ZeroGrad between steps).
func (m *Model) ForwardBackward(inputs map[string]*tensor.Dense) (*Result, error) {
	return m.Run(inputs, RunMode{Train: true, Backward: true})
}

// LossAndGrads is ForwardBackward without the builder's named outputs (RunMode.LossOnly):
// a training step's loss and gradients; Result.Values is empty.
func (m *Model) LossAndGrads(inputs map[string]*tensor.Dense) (*Result, error) {
	return m.Run(inputs, RunMode{Train: true, Backward: true, LossOnly: true})
}

// signature appends to key a byte string that identifies the input names, dtypes and
// shapes and the mode, and returns it; names is scratch for the sorted names.
func signature(key []byte, names []string, inputs map[string]*tensor.Dense, mode RunMode) ([]byte, []string) {
	names = names[:0]
	for n := range inputs {
		names = append(names, n)
	}
	slices.Sort(names)
	var flags byte
	if mode.Train {
		flags |= 1
	}
	if mode.Backward {
		flags |= 2
	}
	if mode.InputGrads {
		flags |= 4
	}
	if mode.Taps {
		flags |= 8
	}
	if mode.LossOnly {
		flags |= 16
	}
	key = append(key[:0], flags)
	for _, n := range names {
		t := inputs[n]
		key = binary.AppendUvarint(key, uint64(len(n)))
		key = append(key, n...)
		switch dt := t.Dtype(); dt {
		case Float32:
			key = append(key, 'f')
		case Float64:
			key = append(key, 'd')
		case tensor.Int:
			key = append(key, 'i')
		default:
			key = append(key, 'o')
			key = binary.AppendUvarint(key, uint64(len(dt.Name())))
			key = append(key, dt.Name()...)
		}
		shape := t.Shape()
		key = binary.AppendUvarint(key, uint64(len(shape)))
		for _, d := range shape {
			key = binary.AppendUvarint(key, uint64(d))
		}
	}
	return key, names
}

// Run computes the model's outputs on inputs (named tensors; float inputs must have the
// parameters' dtype, integer inputs are Int).
func (m *Model) Run(inputs map[string]*tensor.Dense, mode RunMode) (*Result, error) {
	for name, t := range inputs {
		if t == nil {
			return nil, fmt.Errorf("input %q is nil", name)
		}
		switch t.Dtype() {
		case m.params.dtype, tensor.Int:
		default:
			return nil, fmt.Errorf("input %q has dtype %v, want %v or int", name, t.Dtype(), m.params.dtype)
		}
	}
	m.key, m.names = signature(m.key, m.names, inputs, mode)
	if parts, examples := m.partsFor(inputs, mode); parts > 1 && !m.undeclared {
		p, ok := m.plans.get(m.key)
		if !ok || p.auto != (m.shards == 0) || (!p.whole && len(p.graphs) != parts) {
			var err error
			if p, err = m.plan(inputs, mode, parts, examples); err != nil {
				return nil, err
			}
			b := p.bytes()
			collectDropped(m.plans.put(m.key, p, b), b)
		}
		if !p.whole {
			return m.runParts(p, inputs, mode)
		}
	}
	c, ok := m.cache.get(m.key)
	if !ok {
		var err error
		if c, err = m.compile(inputs, mode, m.rng); err != nil {
			return nil, err
		}
		c.intoParams()
		c.planBuffers()
		b := c.bytes()
		collectDropped(m.cache.put(m.key, c, b), b)
	}
	return m.exec(c, inputs, mode)
}

// compile builds and compiles the graph for inputs; its dropout masks come from rng.
func (m *Model) compile(inputs map[string]*tensor.Dense, mode RunMode, rng *rand.Rand) (c *compiled, err error) {
	g := newGraph(m.params.dtype, mode.Train, rng)
	g.tapping = mode.Taps
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g.addInput(n, inputs[n].Dtype(), inputs[n].Shape())
	}
	out, err := m.build(g)
	if err == nil {
		err = g.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("build model: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("compile model: %v", r)
		}
	}()
	c = &compiled{g: g, values: map[string]*G.Value{}, inputGrads: map[string]*G.Node{}, taps: map[string]*G.Value{},
		outValues: map[string]*tensor.Dense{}, outInputGrads: map[string]*tensor.Dense{}, outTaps: map[string]*tensor.Dense{},
		batch: out.Batch}
	for name, n := range g.taps {
		v := new(G.Value)
		G.Read(n.n, v)
		c.taps[name] = v
	}
	if out.Loss != nil {
		if out.Loss.g != g {
			return nil, errors.New("build model: loss belongs to another graph")
		}
		if !out.Loss.n.IsScalar() {
			if out.Loss.n.Shape().TotalSize() != 1 {
				return nil, fmt.Errorf("build model: loss has shape %v, want a scalar", out.Loss.n.Shape())
			}
			out.Loss = g.Reshape(out.Loss, nil)
		}
		c.loss = new(G.Value)
		G.Read(out.Loss.n, c.loss)
	}
	for name, n := range out.Values {
		if n == nil || n.g != g {
			return nil, fmt.Errorf("build model: output %q is nil or from another graph", name)
		}
		if mode.LossOnly {
			continue
		}
		v := new(G.Value)
		G.Read(n.n, v)
		c.values[name] = v
	}
	if mode.Backward || mode.InputGrads {
		if out.Loss == nil {
			return nil, errors.New("build model: gradients requested but the builder returned no loss")
		}
		var wrt G.Nodes
		if mode.Backward {
			for _, p := range g.order {
				wrt = append(wrt, g.params[p].n)
			}
		}
		var inNames []string
		if mode.InputGrads {
			for _, name := range g.inOrd {
				n := g.inputs[name]
				if n.Dtype() == g.dtype {
					wrt = append(wrt, n.n)
					inNames = append(inNames, name)
				}
			}
		}
		if len(wrt) > 0 {
			markNoGrad(g.eg, wrt)
			grads, err := G.Grad(out.Loss.n, wrt...)
			if err != nil {
				return nil, fmt.Errorf("build model: gradient: %w", err)
			}
			np := 0
			if mode.Backward {
				np = len(g.order)
			}
			c.paramGrads = append(c.paramGrads, grads[:np]...)
			for i, name := range inNames {
				c.inputGrads[name] = grads[np+i]
			}
		}
	}
	if useSumEngine {
		c.vm = G.NewTapeMachine(g.eg, G.WithEngine(sumEngine{}))
	} else {
		c.vm = G.NewTapeMachine(g.eg)
	}
	// gorgonia gives every tape machine a finalizer, which does nothing without CUDA. An
	// object with a finalizer keeps all it references alive through one more collection
	// after it is dropped, and the finalizer goroutine must run in between: a dropped
	// graph's buffers (its machine's registers) outlived the collection that was to free
	// them (collectDropped), and the process's peak held two graphs at T = 4096. Without
	// the finalizer a dropped graph is freed by one collection.
	runtime.SetFinalizer(c.vm, nil)
	return c, nil
}

func (m *Model) exec(c *compiled, inputs map[string]*tensor.Dense, mode RunMode) (res *Result, err error) {
	defer c.vm.Reset()
	if err := m.runGraph(c, inputs); err != nil {
		return nil, err
	}
	clear(c.outValues)
	clear(c.outInputGrads)
	clear(c.outTaps)
	res = &Result{Values: c.outValues, InputGrads: c.outInputGrads, Parts: 1}
	if mode.Taps {
		res.Taps = c.outTaps
		for name, v := range c.taps {
			res.Taps[name] = asDense(*v)
		}
	}
	if c.loss != nil {
		res.HasLoss = true
		res.Loss, err = scalarOf(*c.loss)
		if err != nil {
			return nil, err
		}
	}
	for name, v := range c.values {
		res.Values[name] = asDense(*v)
	}
	for name, n := range c.inputGrads {
		res.InputGrads[name] = asDense(n.Value())
	}
	if len(c.paramGrads) > 0 {
		if err := c.addGrads(); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// addGrads adds the value of every parameter's gradient node into the parameter's
// gradient, parameters in parallel.
func (c *compiled) addGrads() error {
	order := c.g.order[:len(c.paramGrads)]
	for j, p := range order {
		if err := checkGrad(p, c.paramGrads[j].Value()); err != nil {
			return fmt.Errorf("gradient of %s: %w", p.name, err)
		}
	}
	par.For(len(order), 1, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			if c.inPlace == nil || !c.inPlace[j] {
				addGrad(order[j], c.paramGrads[j].Value())
			}
		}
	})
	return nil
}

// intoParams has the op that computes a parameter's whole gradient write it straight
// into the parameter's gradient (bwdOp.into), where the op's kernel can add into its
// destination and no other node reads the gradient node (a parameter read by two ops
// has the sum of their gradients as its gradient node). It saves a pass over those
// gradients per run. Only for a graph that runs whole: the parts of a batch combine
// their own gradients.
func (c *compiled) intoParams() {
	uses := map[*G.Node]int{}
	for _, n := range c.paramGrads {
		uses[n]++
	}
	for j, n := range c.paramGrads {
		b, ok := n.Op().(*bwdOp)
		if !ok || uses[n] > 1 || c.g.eg.To(n.ID()).Len() > 0 || b.fwd.inShapes[b.wrt].IsScalar() {
			continue
		}
		if _, ok := b.fwd.k.(gradIntoKernel); !ok {
			continue
		}
		if c.inPlace == nil {
			c.inPlace = make([]bool, len(c.paramGrads))
		}
		b.into = c.g.order[j]
		c.inPlace[j] = true
	}
}

// runGraph binds the parameters and inputs to c's graph and runs its machine, which
// the caller resets once it has read the results.
func (m *Model) runGraph(c *compiled, inputs map[string]*tensor.Dense) (err error) {
	g := c.g
	for p, n := range g.params {
		// Parameters are updated in place: rebind only a value that changed (G.Let
		// allocates).
		if v, ok := n.n.Value().(*tensor.Dense); ok && v == p.value {
			continue
		}
		if err := G.Let(n.n, p.value); err != nil {
			return fmt.Errorf("bind %s: %w", p.name, err)
		}
	}
	for name, n := range g.inputs {
		t := inputs[name]
		var v G.Value = t
		if n.n.IsScalar() {
			v, _ = scalarValue(t)
		} else if b, ok := n.n.Value().(*tensor.Dense); ok && b == t {
			continue
		}
		if err := G.Let(n.n, v); err != nil {
			return fmt.Errorf("bind input %q: %w", name, err)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("run model: %v", r)
		}
	}()
	if c.allocPlan != nil {
		c.allocPlan()
		c.allocPlan = nil
	}
	if err := c.vm.RunAll(); err != nil {
		return fmt.Errorf("run model: %w", err)
	}
	return nil
}

func scalarValue(t *tensor.Dense) (G.Value, error) {
	switch t.Dtype() {
	case Float32:
		return G.NewF32(t.Float32s()[0]), nil
	case Float64:
		return G.NewF64(t.Float64s()[0]), nil
	}
	return t, nil
}

func scalarOf(v G.Value) (float64, error) {
	switch d := v.(type) {
	case *G.F32:
		return float64(*d), nil
	case *G.F64:
		return float64(*d), nil
	case *tensor.Dense:
		if d.Shape().TotalSize() == 1 {
			switch d.Dtype() {
			case Float32:
				return float64(d.Float32s()[0]), nil
			case Float64:
				return d.Float64s()[0], nil
			}
		}
	}
	return 0, fmt.Errorf("loss is %T, want a scalar", v)
}

func asDense(v G.Value) *tensor.Dense {
	switch t := v.(type) {
	case *tensor.Dense:
		return t
	case G.Scalar:
		return tensor.New(tensor.FromScalar(t.Data()))
	}
	return nil
}

// addGrad adds the gradient value v into dst; checkGrad has vouched for its type and
// size.
func addGrad(p *Param, v G.Value) {
	dst, zero := p.grad, p.gradZero
	p.gradZero = false
	if dst.Dtype() == Float32 {
		src, _ := floatData[float32](v, dst.Len())
		if zero {
			copy(dst.Float32s(), src)
		} else {
			vmath.Add(dst.Float32s(), src)
		}
		return
	}
	d := dst.Float64s()
	src, _ := floatData[float64](v, len(d))
	if zero {
		copy(d, src)
		return
	}
	for i, x := range src {
		d[i] += x
	}
}

// checkGrad reports whether v is a gradient of param: a value of its dtype and size.
func checkGrad(param *Param, v G.Value) error {
	var err error
	switch param.grad.Dtype() {
	case Float32:
		_, err = floatData[float32](v, param.Size())
	case Float64:
		_, err = floatData[float64](v, param.Size())
	default:
		err = fmt.Errorf("dtype %v", param.grad.Dtype())
	}
	return err
}

// floatData returns the elements of a gradient value.
func floatData[T float](v G.Value, n int) ([]T, error) {
	if t, ok := v.(*tensor.Dense); ok {
		if t.Dtype() != dtypeOf[T]() {
			return nil, fmt.Errorf("gradient has dtype %v", t.Dtype())
		}
		d := flat[T](t)
		if len(d) != n {
			return nil, fmt.Errorf("gradient has %d elements, want %d", len(d), n)
		}
		return d, nil
	}
	var z T
	switch d := v.(type) {
	case *G.F32:
		if _, ok := any(z).(float32); ok && n == 1 {
			return []T{T(*d)}, nil
		}
	case *G.F64:
		if _, ok := any(z).(float64); ok && n == 1 {
			return []T{T(*d)}, nil
		}
	}
	return nil, fmt.Errorf("gradient is %T, want %d elements of %v", v, n, dtypeOf[T]())
}

func dtypeOf[T float]() Dtype {
	var z T
	if _, ok := any(z).(float32); ok {
		return Float32
	}
	return Float64
}
