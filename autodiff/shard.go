package autodiff

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"

	"github.com/locusml/locus/autodiff/internal/gradsum"
	"github.com/locusml/locus/internal/par"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Batch, returned in Outputs, declares that a graph computes a batch of independent
// examples, so that a Model may run it as parts of the batch at once, one part per core
// (batch-sharded execution, Model.SetShards), and combine the parts exactly.
//
// The contract, which the builder vouches for by returning a Batch:
//   - every input is batch-major: its dimension 0 is k·Examples for some k ≥ 1 (k rows
//     per example: ids [B, T] have k = 1, targets [B·T] have k = T), and no input is
//     shared by all examples (a [T, T] mask input, a scalar);
//   - no operation mixes two examples (no batch statistics, no attention across the
//     batch), so that the graph of a contiguous part of the examples computes exactly
//     that part's rows;
//   - every output in Values is batch-major in the same sense;
//   - the loss is a mean over LossItems items, or, with LossSum, a sum over examples.
//
// Model splits the inputs into contiguous runs of whole examples (it takes the smallest
// dimension 0 of the inputs as the number of examples, and checks it against Examples),
// builds the graph once per part shape, runs the parts concurrently with each part's
// operations serial, and combines: the loss is Σ_p items_p·loss_p / Σ_p items_p (Σ_p
// loss_p with LossSum), parameter and input gradients likewise, and outputs are the
// parts' rows concatenated. The result equals the whole batch's up to float round-off.
// A builder whose graph breaks the contract returns no Batch and runs whole.
type Batch struct {
	// Examples is the number of examples of this graph's inputs (B).
	Examples int
	// LossItems returns the number of items the loss is a mean over, from the graph's
	// inputs: the scored tokens of a cross-entropy that ignores positions, the B·n values
	// of an element-wise MSE. It may be 0 (a part with nothing scored). Required with a
	// loss unless LossSum.
	LossItems func(inputs map[string]*tensor.Dense) float64
	// LossSum says that the loss is a sum over the examples: the parts' losses add.
	LossSum bool
}

// check reports whether b is a usable declaration for a graph of examples examples.
func (b *Batch) check(hasLoss bool, examples int) error {
	switch {
	case b.Examples != examples:
		return fmt.Errorf("Batch.Examples is %d, but the inputs' smallest dimension 0 is %d: not every input is batch-major", b.Examples, examples)
	case hasLoss && b.LossSum && b.LossItems != nil:
		return errors.New("Batch has both LossSum and LossItems")
	case hasLoss && !b.LossSum && b.LossItems == nil:
		return errors.New("Batch says neither how many items the loss is a mean over (LossItems) nor that it is a sum (LossSum)")
	}
	return nil
}

// CountNotEqual returns a Batch.LossItems that counts the elements of the integer input
// name that differ from v: the positions a cross-entropy with ignore index v scores.
func CountNotEqual(name string, v int) func(map[string]*tensor.Dense) float64 {
	return func(in map[string]*tensor.Dense) float64 {
		t := in[name]
		if t == nil || t.Dtype() != tensor.Int {
			return 0
		}
		n := 0
		for _, x := range t.Ints() {
			if x != v {
				n++
			}
		}
		return float64(n)
	}
}

// SetShards sets into how many parts Run splits a batch whose builder declares Batch:
// the parts run at once, each on its own goroutine with its operations serial instead
// of every operation split across cores. n > 1 runs a batch of B examples in min(n, B)
// parts of ⌊B/parts⌋ or ⌈B/parts⌉ examples; 1 runs every batch whole. 0 (the default)
// runs P = GOMAXPROCS parts when every part then has work for its core and the parts are
// even enough: B ≥ P and the largest part at most 5/4 of B/P (B = 3 on 2 cores runs
// whole: a part of 2 examples would leave the other core idle a third of the step), and
// when a part's own values (activations and their gradients) are at least twice the
// parameters, which every part reads and whose gradients it writes whole (partsMin);
// else whole, every operation split across the cores. Runs with RunMode.Taps always run
// whole.
//
// The parts' results are combined in a fixed order, so that a run is deterministic for a
// given number of parts; a different number of parts changes float round-off, and, in
// training mode, the dropout masks (each part draws its own from a seed the Model's
// generator gives once per run).
func (m *Model) SetShards(n int) error {
	if n < 0 {
		return fmt.Errorf("shards = %d, want 0 (one per GOMAXPROCS) or more", n)
	}
	m.shards = n
	return nil
}

// Shards returns the number set by SetShards (0: GOMAXPROCS).
func (m *Model) Shards() int { return m.shards }

// shardPlan is how one input signature runs as parts.
type shardPlan struct {
	whole    bool // run whole: the builder declared no Batch, or the parts would not pay
	auto     bool // planned for SetShards(0), which weighs whether parts pay
	examples int
	rows     map[string]int // rows per example of each input
	lo, hi   []int          // the examples of each part
	graphs   []*compiled
	pcgs     []*rand.PCG // the parts' dropout generators
	usesRNG  bool
	in       []map[string]*tensor.Dense
	errs     []error
	coef     []float64
	// reused by every run: the maps of Result, and the tensors they hold
	outValues, outInputGrads map[string]*tensor.Dense
	bufValues, bufInputGrads map[string]*tensor.Dense
}

// partsFor returns into how many parts Run splits inputs, and the number of examples;
// 1 to run whole.
func (m *Model) partsFor(inputs map[string]*tensor.Dense, mode RunMode) (parts, examples int) {
	n := m.shards
	auto := n == 0
	if auto {
		n = runtime.GOMAXPROCS(0)
	}
	if n < 2 || mode.Taps || len(inputs) == 0 {
		return 1, 0
	}
	examples = -1
	for _, t := range inputs {
		s := t.Shape()
		if len(s) == 0 || t.IsView() {
			return 1, 0
		}
		if examples < 0 || s[0] < examples {
			examples = s[0]
		}
	}
	if examples < 2 {
		return 1, 0
	}
	for _, t := range inputs {
		if t.Shape()[0]%examples != 0 {
			return 1, 0
		}
		switch t.Dtype() {
		case Float32, Float64, tensor.Int:
		default:
			return 1, 0
		}
	}
	if auto && (examples < n || 4*((examples+n-1)/n)*n > 5*examples) {
		return 1, 0
	}
	return min(n, examples), examples
}

// plan compiles the parts' graphs for inputs; a plan with whole set when the builder
// declares no Batch.
func (m *Model) plan(inputs map[string]*tensor.Dense, mode RunMode, parts, examples int) (*shardPlan, error) {
	p := &shardPlan{examples: examples, rows: map[string]int{}, outValues: map[string]*tensor.Dense{}, outInputGrads: map[string]*tensor.Dense{},
		bufValues: map[string]*tensor.Dense{}, bufInputGrads: map[string]*tensor.Dense{}}
	for name, t := range inputs {
		p.rows[name] = t.Shape()[0] / examples
	}
	for i := range parts {
		lo, hi := PartRange(examples, i, parts)
		p.lo, p.hi = append(p.lo, lo), append(p.hi, hi)
		p.in = append(p.in, map[string]*tensor.Dense{})
	}
	p.views(inputs)
	for i := range parts {
		pcg := rand.NewPCG(0, uint64(i))
		c, err := m.compile(p.in[i], mode, rand.New(pcg))
		if err != nil {
			if i == 0 {
				// A builder that cannot build a part (inputs that are not batch-major)
				// runs whole, where its errors are its own.
				return &shardPlan{whole: true, auto: m.shards == 0}, nil
			}
			return nil, fmt.Errorf("part %d of %d (examples %d to %d): %w", i+1, parts, p.lo[i], p.hi[i], err)
		}
		if c.batch == nil {
			m.undeclared = true
			return &shardPlan{whole: true, auto: m.shards == 0}, nil
		}
		if err := c.batch.check(c.loss != nil, p.hi[i]-p.lo[i]); err != nil {
			if i == 0 {
				return nil, fmt.Errorf("build model: %w", err)
			}
			return nil, fmt.Errorf("build model: part %d of %d: %w", i+1, parts, err)
		}
		if i > 0 && !sameParams(c.g.order, p.graphs[0].g.order) {
			return nil, fmt.Errorf("build model: part %d of %d reads other parameters than part 1", i+1, parts)
		}
		c.planBuffers()
		p.graphs = append(p.graphs, c)
		p.pcgs = append(p.pcgs, pcg)
		p.usesRNG = p.usesRNG || c.g.usesRNG
	}
	p.auto = m.shards == 0
	if p.auto && !p.pays(mode) {
		return &shardPlan{whole: true, auto: true}, nil
	}
	p.errs = make([]error, parts)
	p.coef = make([]float64, parts)
	return p, nil
}

// partsMin is how many values of its own (activations, and in training their
// gradients) a part must hold per parameter value for a default run (SetShards(0)) to
// run as parts. Each part reads every parameter and, in training, writes a whole
// gradient of every parameter, which the combination then adds; a whole run reads and
// writes them once and splits each operation across the cores instead. Where the
// parameters outweigh a part's own work, the whole run is faster. On the 2-core Zen 4
// of bench/PROFILE.md's round nine (bench's BenchmarkShardsAlternating, whole/parts
// step time): the dae workload (784-256-64-256-784, two parts of 64 images) holds 1.26
// values of its own per parameter value and ran 0.95–0.99; at batch 256 (2.5) the two
// were even (0.97–1.00), at 512 (5) parts were faster (1.03); the char-LM workload (56)
// 1.13.
const partsMin = 2

// pays reports whether a part holds at least partsMin values of its own per parameter
// value (see partsMin); a graph without parameters always does.
func (p *shardPlan) pays(mode RunMode) bool {
	c := p.graphs[0]
	var params int64
	for _, q := range c.g.order {
		params += int64(q.Size())
	}
	if params == 0 {
		return true
	}
	own := graphValues(c.g) - params // the parameters' nodes
	if mode.Backward {
		own -= params // their gradients
	}
	return own >= partsMin*params
}

// bytes returns the bytes of the values of the parts' graphs (0 for a whole plan).
func (p *shardPlan) bytes() int64 {
	var n int64
	for _, c := range p.graphs {
		n += c.bytes()
	}
	return n
}

func sameParams(a, b []*Param) bool {
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

// PartRange returns the examples [lo, hi) of part part of parts of n: contiguous, in
// order, the first n mod parts parts one example longer. Batch parts (SetShards) and
// train's data-parallel ranks split a batch this way.
func PartRange(n, part, parts int) (lo, hi int) {
	q, r := n/parts, n%parts
	lo = part*q + min(part, r)
	hi = lo + q
	if part < r {
		hi++
	}
	return lo, hi
}

// views points every part's inputs at its rows of inputs (no copy).
func (p *shardPlan) views(inputs map[string]*tensor.Dense) {
	for i, in := range p.in {
		for name, t := range inputs {
			k := p.rows[name]
			s := t.Shape()
			per := s.TotalSize() / s[0]
			a, z := p.lo[i]*k*per, p.hi[i]*k*per
			var backing any
			switch t.Dtype() {
			case Float32:
				backing = t.Float32s()[a:z:z]
			case Float64:
				backing = t.Float64s()[a:z:z]
			default:
				backing = t.Ints()[a:z:z]
			}
			shape := append([]int{(p.hi[i] - p.lo[i]) * k}, s[1:]...)
			in[name] = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))
		}
	}
}

// runParts runs inputs as the parts of plan p and combines their results.
func (m *Model) runParts(p *shardPlan, inputs map[string]*tensor.Dense, mode RunMode) (res *Result, err error) {
	p.views(inputs)
	if mode.Train && p.usesRNG {
		seed := m.rng.Uint64()
		for i, pcg := range p.pcgs {
			pcg.Seed(seed, uint64(i))
		}
	}
	defer func() {
		for _, c := range p.graphs {
			c.vm.Reset()
		}
	}()
	// Each part is one chunk of a parallel section: the operations inside a part find
	// the pool busy and run serially on the part's goroutine.
	par.For(len(p.graphs), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			p.errs[i] = m.runGraph(p.graphs[i], p.in[i])
		}
	})
	for i, err := range p.errs {
		if err != nil {
			return nil, fmt.Errorf("part %d of %d (examples %d to %d): %w", i+1, len(p.graphs), p.lo[i], p.hi[i], err)
		}
	}
	res = &Result{Values: p.outValues, InputGrads: p.outInputGrads, Parts: len(p.graphs)}
	clear(p.outValues)
	clear(p.outInputGrads)
	// The weight of each part in the batch's loss.
	c0 := p.graphs[0]
	if c0.loss != nil {
		res.HasLoss = true
		var total float64
		losses := make([]float64, len(p.graphs))
		for i, c := range p.graphs {
			if losses[i], err = scalarOf(*c.loss); err != nil {
				return nil, err
			}
			if c.batch.LossSum {
				p.coef[i] = 1
			} else {
				p.coef[i] = c.batch.LossItems(p.in[i])
				total += p.coef[i]
			}
		}
		if !c0.batch.LossSum {
			for i := range p.coef {
				if total > 0 {
					p.coef[i] /= total
				} else {
					p.coef[i] = 0
				}
			}
		}
		for i, l := range losses {
			if p.coef[i] != 0 {
				res.Loss += p.coef[i] * l
			}
		}
	}
	for name := range c0.values {
		if res.Values[name], err = p.concat(p.bufValues[name], func(c *compiled) G.Value { return *c.values[name] }, nil); err != nil {
			return nil, fmt.Errorf("output %q: %w", name, err)
		}
		p.bufValues[name] = res.Values[name]
	}
	for name := range c0.inputGrads {
		if res.InputGrads[name], err = p.concat(p.bufInputGrads[name], func(c *compiled) G.Value { return c.inputGrads[name].Value() }, p.coef); err != nil {
			return nil, fmt.Errorf("gradient of input %q: %w", name, err)
		}
		p.bufInputGrads[name] = res.InputGrads[name]
	}
	if len(c0.paramGrads) > 0 {
		if err := p.addGrads(); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// concat returns the parts' values of one output, each scaled by coef (nil: 1), stacked
// along dimension 0 in dst when its shape fits, else in a new tensor.
func (p *shardPlan) concat(dst *tensor.Dense, value func(*compiled) G.Value, coef []float64) (*tensor.Dense, error) {
	var shape tensor.Shape
	k := 0
	for i, c := range p.graphs {
		v := asDense(value(c))
		if v == nil {
			return nil, fmt.Errorf("is %T, want a tensor", value(c))
		}
		s := v.Shape()
		n := p.hi[i] - p.lo[i]
		if len(s) == 0 || s[0]%n != 0 || (i > 0 && (s[0]/n != k || !s[1:].Eq(shape[1:]))) {
			return nil, fmt.Errorf("has shape %v in a part of %d examples: not batch-major, as Batch requires", s, n)
		}
		if i == 0 {
			k = s[0] / n
			shape = append(tensor.Shape{p.examples * k}, s[1:]...)
		}
	}
	if dst == nil || !dst.Shape().Eq(shape) || dst.Dtype() != asDense(value(p.graphs[0])).Dtype() {
		dst = tensor.New(tensor.Of(asDense(value(p.graphs[0])).Dtype()), tensor.WithShape(shape...))
	}
	per := shape.TotalSize() / shape[0]
	for i, c := range p.graphs {
		v := asDense(value(c))
		a := p.lo[i] * k * per
		scale := 1.0
		if coef != nil {
			scale = coef[i]
		}
		switch v.Dtype() {
		case Float32:
			copyScaled(dst.Float32s()[a:], v.Float32s(), scale)
		case Float64:
			copyScaled(dst.Float64s()[a:], v.Float64s(), scale)
		case tensor.Int:
			copy(dst.Ints()[a:], v.Ints())
		default:
			return nil, fmt.Errorf("has dtype %v", v.Dtype())
		}
	}
	return dst, nil
}

func copyScaled[T float](dst, src []T, scale float64) {
	if scale == 1 {
		copy(dst, src)
		return
	}
	s := T(scale)
	for i, x := range src {
		dst[i] = s * x
	}
}

// addGrads adds Σ_p coef_p·grad_p into every parameter's gradient, parts in order,
// parameters in parallel.
func (p *shardPlan) addGrads() error {
	order := p.graphs[0].g.order
	np := len(p.graphs[0].paramGrads)
	for j, param := range order[:np] {
		for _, c := range p.graphs {
			if err := checkGrad(param, c.paramGrads[j].Value()); err != nil {
				return fmt.Errorf("gradient of %s: %w", param.name, err)
			}
		}
	}
	par.For(np, 1, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			p.addGrad(order[j], j)
		}
	})
	return nil
}

func (p *shardPlan) addGrad(param *Param, j int) {
	if g := param.gradTensor(); g.Dtype() == Float32 {
		addScaled(g.Float32s(), p, j)
	} else {
		addScaled(g.Float64s(), p, j)
	}
}

// addScaled adds Σ_p coef_p·grad_p of parameter j into dst; checkGrad has vouched for
// the gradients' types and sizes.
func addScaled[T float](dst []T, p *shardPlan, j int) {
	src := func(i int) []T {
		s, _ := floatData[T](p.graphs[i].paramGrads[j].Value(), len(dst))
		return s
	}
	if len(p.graphs) == 2 {
		a, b, ca, cb := src(0), src(1), T(p.coef[0]), T(p.coef[1])
		if d32, ok := any(dst).([]float32); ok {
			gradsum.AddScaled2(d32, any(a).([]float32), any(b).([]float32), float32(ca), float32(cb))
			return
		}
		for k := range dst {
			dst[k] += T(ca*a[k]) + T(cb*b[k])
		}
		return
	}
	srcs := make([][]T, len(p.graphs))
	for i := range srcs {
		srcs[i] = src(i)
	}
	for k := range dst {
		s := T(p.coef[0]) * srcs[0][k]
		for i := 1; i < len(srcs); i++ {
			s += T(p.coef[i]) * srcs[i][k]
		}
		dst[k] += s
	}
}
