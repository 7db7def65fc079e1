package autodiff

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Outputs is what a Builder returns: an optional scalar loss and named output nodes.
type Outputs struct {
	Loss   *Node
	Values map[string]*Node
}

// Builder builds the model's computation into g, reading inputs with g.Input(name) and
// parameters with g.Param(p). It is called once per distinct input signature (names,
// shapes, dtypes, mode), so it must depend only on those and on the model's
// configuration.
type Builder func(g *Graph) (Outputs, error)

// Model runs a Builder's graph on concrete inputs. It hides gorgonia's lifecycle: it
// compiles one graph and one machine per input signature (so a last partial batch or a
// different sequence length just works), binds parameters and inputs, resets the machine,
// copies results out before the backward pass can clobber them, and adds gradients into
// each Param's gradient.
//
// A Model is not safe for concurrent use.
type Model struct {
	params *Params
	build  Builder
	rng    *rand.Rand
	pcg    *rand.PCG
	cache  map[string]*compiled
}

// NewModel returns a model over params built by build. seed drives dropout masks.
func NewModel(params *Params, build Builder, seed uint64) *Model {
	pcg := rand.NewPCG(seed, 0xda3e39cb94b95bdb)
	return &Model{params: params, build: build, pcg: pcg, rng: rand.New(pcg), cache: map[string]*compiled{}}
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
}

// Result holds the values of one run. Its tensors belong to the model and are
// overwritten by the next Run with the same input signature: Clone what you keep.
type Result struct {
	Loss       float64
	HasLoss    bool
	Values     map[string]*tensor.Dense
	InputGrads map[string]*tensor.Dense
}

type compiled struct {
	g          *Graph
	vm         G.VM
	loss       *G.Value
	values     map[string]*G.Value
	paramGrads []*G.Value // aligned with g.order
	inputGrads map[string]*G.Value
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

func signature(inputs map[string]*tensor.Dense, mode RunMode) string {
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%v|", mode)
	for _, n := range names {
		t := inputs[n]
		fmt.Fprintf(&b, "%s:%v%v;", n, t.Dtype(), t.Shape())
	}
	return b.String()
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
	key := signature(inputs, mode)
	c, ok := m.cache[key]
	if !ok {
		var err error
		if c, err = m.compile(inputs, mode); err != nil {
			return nil, err
		}
		m.cache[key] = c
	}
	return m.exec(c, inputs, mode)
}

func (m *Model) compile(inputs map[string]*tensor.Dense, mode RunMode) (c *compiled, err error) {
	g := newGraph(m.params.dtype, mode.Train, m.rng)
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
	c = &compiled{g: g, values: map[string]*G.Value{}, inputGrads: map[string]*G.Value{}}
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
			grads, err := G.Grad(out.Loss.n, wrt...)
			if err != nil {
				return nil, fmt.Errorf("build model: gradient: %w", err)
			}
			np := 0
			if mode.Backward {
				np = len(g.order)
			}
			for i := range np {
				v := new(G.Value)
				G.Read(grads[i], v)
				c.paramGrads = append(c.paramGrads, v)
			}
			for i, name := range inNames {
				v := new(G.Value)
				G.Read(grads[np+i], v)
				c.inputGrads[name] = v
			}
		}
	}
	c.vm = G.NewTapeMachine(g.eg)
	return c, nil
}

func (m *Model) exec(c *compiled, inputs map[string]*tensor.Dense, mode RunMode) (res *Result, err error) {
	g := c.g
	for p, n := range g.params {
		if err := G.Let(n.n, p.value); err != nil {
			return nil, fmt.Errorf("bind %s: %w", p.name, err)
		}
	}
	for name, n := range g.inputs {
		var v G.Value = inputs[name]
		if n.n.IsScalar() {
			v, _ = scalarValue(inputs[name])
		}
		if err := G.Let(n.n, v); err != nil {
			return nil, fmt.Errorf("bind input %q: %w", name, err)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("run model: %v", r)
		}
		c.vm.Reset()
	}()
	if err := c.vm.RunAll(); err != nil {
		return nil, fmt.Errorf("run model: %w", err)
	}
	res = &Result{Values: map[string]*tensor.Dense{}, InputGrads: map[string]*tensor.Dense{}}
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
	for name, v := range c.inputGrads {
		res.InputGrads[name] = asDense(*v)
	}
	for i, p := range g.order[:len(c.paramGrads)] {
		if err := addInto(p.grad, *c.paramGrads[i]); err != nil {
			return nil, fmt.Errorf("gradient of %s: %w", p.name, err)
		}
	}
	return res, nil
}

func scalarValue(t *tensor.Dense) (G.Value, error) {
	switch d := t.Data().(type) {
	case []float32:
		return G.NewF32(d[0]), nil
	case []float64:
		return G.NewF64(d[0]), nil
	case float32:
		return G.NewF32(d), nil
	case float64:
		return G.NewF64(d), nil
	}
	return t, nil
}

func scalarOf(v G.Value) (float64, error) {
	switch d := v.Data().(type) {
	case float32:
		return float64(d), nil
	case float64:
		return d, nil
	case []float32:
		if len(d) == 1 {
			return float64(d[0]), nil
		}
	case []float64:
		if len(d) == 1 {
			return d[0], nil
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

func addInto(dst *tensor.Dense, v G.Value) error {
	switch d := dst.Data().(type) {
	case []float32:
		src, err := floatData[float32](v, len(d))
		if err != nil {
			return err
		}
		for i, x := range src {
			d[i] += x
		}
	case []float64:
		src, err := floatData[float64](v, len(d))
		if err != nil {
			return err
		}
		for i, x := range src {
			d[i] += x
		}
	}
	return nil
}

func floatData[T float](v G.Value, n int) ([]T, error) {
	switch d := v.Data().(type) {
	case []T:
		if len(d) != n {
			return nil, fmt.Errorf("gradient has %d elements, want %d", len(d), n)
		}
		return d, nil
	case T:
		if n != 1 {
			return nil, fmt.Errorf("gradient is a scalar, want %d elements", n)
		}
		return []T{d}, nil
	}
	return nil, fmt.Errorf("gradient has type %T", v.Data())
}
