package autodiff

import (
	"reflect"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A buffer plan lets the fused ops of one compiled graph share memory for values that
// are never live at once. Without one, each fused op (fwdOp, bwdOp) writes into a
// buffer of its own that it keeps from run to run, so a training graph holds one buffer
// per value, though most backward values are dead a few instructions after they are
// made (the gradient of a layer's input is read by the layer below, then never again),
// and a forward value is dead once the last backward op that reads it has run.
//
// The plan follows the tape machine's own program, in its order: every instruction's
// reads and writes of registers. A value's storage is the set of planned buffers its
// memory may belong to. A fused op's output is a buffer of its own; gorgonia's ops may
// write into the value already in their register (a preallocated result), into an input
// they overwrite, or return a view of an input, so their output may belong to any of
// those storages, and each of those is live at that instruction. A backward op reads
// only the forward values its kernel declares (gradReadsKernel); kernel state between
// passes is planned too (stateKernel). A storage is live from the instruction that
// writes it to the last that reads a value that may belong to it; storages read after
// the run (gradients read in place) stay live to the end. The storages are then placed
// in one arena (placeSpans), which on a transformer's training graph is the peak of the
// live sizes: 0.44 of one buffer each at the baby GPT's size.
//
// Kernels may rely on their buffers only within one call (fusedKernel's contract) and
// on their state only as stateKernel says, so a plan gives the same bits as a buffer
// per value: TestBufferPlanSameBits checks it, with every buffer filled with NaN once
// the plan lets its value go (poisonUnread).

// usePlan turns buffer plans on; tests turn it off to compare.
var usePlan = true

// planStats says what a plan saved: the bytes of the nodes' outputs it placed, one buffer
// each (opBytes; the kernels' states it places are not nodes' values, so not in it), and
// the bytes of the arena that outputs and states share.
type planStats struct {
	buffers     int
	opBytes     int64
	sharedBytes int64
}

// planBuffers plans shared output buffers for c's fused ops (see above), which
// c.allocPlan then makes and hands out. It must run after intoParams, whose ops write
// into parameters' gradients instead. A program it cannot read (another gorgonia) is
// left unplanned.
func (c *compiled) planBuffers() {
	if !usePlan || c.planned {
		return
	}
	c.planned = true
	defer func() {
		// A program this plan misreads runs unplanned rather than failing the Run; the
		// tests check that graphs do get planned (TestBufferPlanSameBits).
		if recover() != nil {
			c.plan, c.allocPlan = planStats{}, nil
		}
	}()
	prog, ok := readProgram(c.vm)
	if !ok {
		return
	}
	dt := c.g.dtype
	size := int64(4)
	if dt == Float64 {
		size = 8
	}
	type storage struct {
		def, last int
		shape     tensor.Shape
		set       func(*tensor.Dense)
		node      bool // a node's output, not a kernel's state
	}
	var stores []*storage
	const end = int(^uint(0) >> 1)
	newStore := func(i int, shape tensor.Shape, set func(*tensor.Dense), node bool) int {
		stores = append(stores, &storage{def: i, last: i, shape: shape, set: set, node: node})
		return len(stores) - 1
	}
	use := func(ss []int, i int) {
		for _, s := range ss {
			stores[s].last = max(stores[s].last, i)
		}
	}
	regs := map[int][]int{}        // register -> storages its value may belong to
	nodeStore := map[int64][]int{} // node -> storages of its value
	states := map[*fwdOp]*opState{}
	seenOp := map[G.Op]bool{}
	for i, in := range prog {
		var op G.Op
		if in.kind == instrExec {
			op = c.g.eg.Node(in.node).(*G.Node).Op()
		}
		declared := backwardReads(op, len(in.reads))
		var reads []int
		for j, r := range in.reads {
			if declared == nil || declared[j] {
				reads = union(reads, regs[r])
			}
		}
		use(reads, i)
		if in.write < 0 {
			continue
		}
		var out []int
		switch in.kind {
		case instrExec:
			n := c.g.eg.Node(in.node).(*G.Node)
			// kernel state: made by the forward op or the first backward op, read by
			// every backward op and by the taps of the weights
			switch o := op.(type) {
			case *fwdOp:
				if sk, ok := o.k.(stateKernel); ok && !seenOp[o] && n.Dtype() == dt {
					st := &opState{k: sk, bufs: sk.stateBufs(o.inShapes)}
					st.dense = make([]*tensor.Dense, len(st.bufs))
					st.store = make([]int, len(st.bufs))
					st.made = make([]bool, len(st.bufs))
					for j, b := range st.bufs {
						st.store[j] = -1
						if b.fromForward && plannedShape(b.shape) {
							st.store[j] = newStore(i, b.shape, st.setter(j), false)
						}
					}
					states[o] = st
				}
				if w, ok := o.k.(*weightsKernel); ok {
					if st := states[w.src.op]; st != nil {
						st.use(use, i, true)
					}
				}
			case *bwdOp:
				if st := states[o.fwd]; st != nil {
					for j, b := range st.bufs {
						if st.store[j] < 0 && !b.fromForward && plannedShape(b.shape) && !st.made[j] {
							st.store[j] = newStore(i, b.shape, st.setter(j), false)
						}
						st.made[j] = true
					}
					st.use(use, i, false)
				}
			}
			if s, ok := plannable(n, dt, seenOp); ok {
				out = []int{newStore(i, s.shape, s.set, true)}
				break
			}
			if isFused(op) {
				// left out: its own buffer, or a parameter's gradient
				break
			}
			// A gorgonia op: its result may be the value in its register or, for one
			// that overwrites an input or returns a view (or one not known to
			// compute afresh), an input's storage.
			out = regs[in.write]
			if op.ReturnsPtr() || op.OverwritesInput() >= 0 || !freshResult(op) {
				out = union(out, reads)
			}
			use(out, i)
		case instrLoad:
			// a parameter or an input: no storage of the plan
		default:
			// alloc keeps the register's value when it fits; LET aliases.
			out = union(regs[in.write], reads)
			use(out, i)
		}
		regs[in.write] = out
		if in.kind == instrExec {
			nodeStore[in.node] = out
		}
	}
	// Gradients read in place after the run.
	for _, n := range c.paramGrads {
		use(nodeStore[n.ID()], end)
	}
	for _, n := range c.inputGrads {
		use(nodeStore[n.ID()], end)
	}
	spans := make([]span, len(stores))
	for i, s := range stores {
		spans[i] = span{first: s.def, last: s.last, elems: s.shape.TotalSize()}
	}
	offsets, total := placeSpans(spans)
	st := planStats{buffers: len(stores), sharedBytes: int64(total) * size}
	for _, s := range stores {
		if s.node {
			st.opBytes += int64(s.shape.TotalSize()) * size
		}
	}
	// The arena is made at the graph's first run (allocPlan), after the Model has
	// dropped and collected the graphs the new one replaces (collectDropped).
	c.allocPlan = func() {
		var arena any
		switch dt {
		case Float32:
			arena = make([]float32, total)
		default:
			arena = make([]float64, total)
		}
		for i, s := range stores {
			t := denseAt(dt, arena, offsets[i], s.shape)
			s.set(t)
			if poisonUnread && s.last != end {
				poisonAt(c, prog, s.last, t)
			}
		}
		for _, st := range states {
			st.k.useState(st.dense)
		}
	}
	c.plan = st
}

// poisonAt has the fused op that runs at instruction last, or the first after it, fill
// t with NaN once t's storage is dead (poisonUnread): a value read after the plan
// let its buffer go then reads NaN.
func poisonAt(c *compiled, prog []instr, last int, t *tensor.Dense) {
	for i := last; i < len(prog); i++ {
		if prog[i].kind != instrExec {
			continue
		}
		var p *deadBufs
		switch op := c.g.eg.Node(prog[i].node).(*G.Node).Op().(type) {
		case *fwdOp:
			p = &op.dead
		case *bwdOp:
			p = &op.dead
		default:
			continue
		}
		if i == last {
			p.after = append(p.after, t)
		} else {
			p.before = append(p.before, t)
		}
		return
	}
}

// deadBufs are a plan's buffers that a fused op fills with NaN before and after its
// kernel runs, in the package's tests (poisonUnread): storages dead by then.
type deadBufs struct {
	before, after []*tensor.Dense
}

// poisonNaN sets every element of the float tensors ts to NaN.
func poisonNaN(ts []*tensor.Dense) {
	for _, t := range ts {
		switch d := t.Data().(type) {
		case []float32:
			fillNaN(d)
		case []float64:
			fillNaN(d)
		}
	}
}

// plannedShape reports whether the plan places a buffer of shape s: not a scalar or
// an empty one, which the kernel keeps making itself.
func plannedShape(s tensor.Shape) bool { return !s.IsScalar() && s.TotalSize() > 0 }

func union(a, b []int) []int {
	out := append([]int{}, a...)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// stateKernel is implemented by kernels that keep float buffers between the calls of a
// pass: what the forward pass leaves for the backward ops (attention's weights), or the
// gradients that the first backward call computes for the others. stateBufs gives their
// shapes for inputs of shapes in; a buffer plan places them in its arena, live from
// the forward op (fromForward) or the first backward op to the last backward op (or tap
// of the weights, LocalMeanWeights) that runs after, and hands them over with useState,
// in that order: a nil tensor is one the kernel makes itself. The kernel must
// write a buffer before it reads it, within the pass.
type stateKernel interface {
	stateBufs(in []tensor.Shape) []stateBuf
	useState(bufs []*tensor.Dense)
}

type stateBuf struct {
	shape       tensor.Shape
	fromForward bool
}

// inputGradBufs appends to bufs a buffer of each input's shape, for the gradients a
// kernel's first backward call computes for the others.
func inputGradBufs(bufs []stateBuf, in []tensor.Shape) []stateBuf {
	for _, s := range in {
		bufs = append(bufs, stateBuf{shape: s})
	}
	return bufs
}

// opState is the plan's view of one fused op's kernel state.
type opState struct {
	k     stateKernel
	bufs  []stateBuf
	store []int  // storage of each buffer, -1 for none
	made  []bool // whether the backward ops' buffers were considered
	dense []*tensor.Dense
}

func (st *opState) setter(j int) func(*tensor.Dense) {
	return func(t *tensor.Dense) { st.dense[j] = t }
}

// use marks the state's buffers (only those from the forward pass when forwardOnly)
// as read at instruction i.
func (st *opState) use(use func([]int, int), i int, forwardOnly bool) {
	for j, s := range st.store {
		if s >= 0 && (!forwardOnly || st.bufs[j].fromForward) {
			use([]int{s}, i)
		}
	}
}

// span is a storage's life, instructions first to last, and its size in elements.
type span struct {
	first, last, elems int
}

// spanAlign is the alignment of a span's offset in elements (64 bytes of float32).
const spanAlign = 16

// placeSpans places spans in one arena, so that two spans alive at one instruction
// never share an element, and returns their offsets and the arena's size: largest
// first, each at the lowest offset where it fits beside the spans already placed that
// live while it does (greedy by size, which comes close to the peak of the live
// sizes on the graphs of a network).
func placeSpans(spans []span) (offsets []int, total int) {
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if spans[a].elems != spans[b].elems {
			return spans[b].elems - spans[a].elems
		}
		return spans[a].first - spans[b].first
	})
	offsets = make([]int, len(spans))
	type placed struct{ lo, hi int }
	var done []int
	var busy []placed
	for _, i := range order {
		s := spans[i]
		busy = busy[:0]
		for _, j := range done {
			if t := spans[j]; t.first <= s.last && s.first <= t.last {
				busy = append(busy, placed{offsets[j], offsets[j] + t.elems})
			}
		}
		slices.SortFunc(busy, func(a, b placed) int { return a.lo - b.lo })
		off := 0
		for _, b := range busy {
			if b.lo >= off+s.elems {
				break
			}
			off = max(off, alignUp(b.hi))
		}
		offsets[i] = off
		total = max(total, off+s.elems)
		done = append(done, i)
	}
	return offsets, total
}

func alignUp(n int) int { return (n + spanAlign - 1) / spanAlign * spanAlign }

// denseAt returns a tensor of shape over the elements of arena from off.
func denseAt(dt Dtype, arena any, off int, shape tensor.Shape) *tensor.Dense {
	n := shape.TotalSize()
	switch dt {
	case Float32:
		return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(arena.([]float32)[off:off+n:off+n]))
	default:
		return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(arena.([]float64)[off:off+n:off+n]))
	}
}

type plannedOut struct {
	shape tensor.Shape
	set   func(*tensor.Dense)
}

// plannable returns how to set the output buffer of n's op when the plan may share it:
// a fused op with a tensor result of the graph's dtype, not writing into a
// parameter's gradient, and not the op of another node.
func plannable(n *G.Node, dt Dtype, seen map[G.Op]bool) (plannedOut, bool) {
	switch op := n.Op().(type) {
	case *fwdOp:
		first := !seen[op]
		seen[op] = true
		if !first || op.outShape.IsScalar() || op.outShape.TotalSize() == 0 || n.Dtype() != dt {
			return plannedOut{}, false
		}
		return plannedOut{shape: op.outShape, set: func(t *tensor.Dense) { op.out = t }}, true
	case *bwdOp:
		first := !seen[op]
		seen[op] = true
		s := op.fwd.inShapes[op.wrt]
		if !first || op.into != nil || s.IsScalar() || s.TotalSize() == 0 || n.Dtype() != dt {
			return plannedOut{}, false
		}
		return plannedOut{shape: s, set: func(t *tensor.Dense) { op.dst = t }}, true
	}
	return plannedOut{}, false
}

// backwardReads returns, for a backward op whose kernel declares what it reads
// (gradReadsKernel), which of its n inputs (the forward inputs, the output, the upstream
// gradient) it reads; nil when it reads them all.
func backwardReads(op G.Op, n int) []bool {
	b, ok := op.(*bwdOp)
	if !ok {
		return nil
	}
	k, ok := b.fwd.k.(gradReadsKernel)
	if !ok {
		return nil
	}
	r := k.gradReads(b.wrt)
	if len(r) != n-1 {
		return nil
	}
	return append(r, true)
}

func isFused(op G.Op) bool {
	switch op.(type) {
	case *fwdOp, *bwdOp:
		return true
	}
	return false
}

// freshResult reports whether a gorgonia op's result is never one of its inputs, apart
// from what ReturnsPtr and OverwritesInput declare: its elementwise, reduction and
// linear-algebra ops, which compute into a new or preallocated tensor.
func freshResult(op G.Op) bool {
	switch reflect.TypeOf(op).String() {
	case "gorgonia.elemBinOp", "*gorgonia.elemBinOp", "gorgonia.elemUnaryOp", "*gorgonia.elemUnaryOp",
		"gorgonia.sumOp", "*gorgonia.sumOp", "gorgonia.linAlgBinOp", "*gorgonia.linAlgBinOp":
		return true
	}
	return false
}

type instrKind int

const (
	instrOther instrKind = iota
	instrExec
	instrLoad
)

// instr is one instruction of a tape machine's program, as the plan needs it.
type instr struct {
	kind  instrKind
	node  int64 // of an exec
	reads []int
	write int // register, -1 for none
}

// readProgram reads the instructions of a gorgonia tape machine (v0.9.18's layout) by
// reflection: gorgonia exports neither the program nor its registers. It reports false
// when the layout is not the one it knows, or an instruction uses another device.
func readProgram(vm G.VM) (prog []instr, ok bool) {
	defer func() {
		if recover() != nil {
			prog, ok = nil, false
		}
	}()
	m := reflect.ValueOf(vm)
	if m.Kind() != reflect.Pointer || m.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	p := m.Elem().FieldByName("p")
	if !p.IsValid() || p.IsNil() {
		return nil, false
	}
	ins := p.Elem().FieldByName("instructions")
	if !ins.IsValid() || ins.Kind() != reflect.Slice {
		return nil, false
	}
	reg := func(r reflect.Value) (int, bool) {
		if r.Kind() != reflect.Struct {
			return 0, false
		}
		id, dev := r.FieldByName("id"), r.FieldByName("device")
		if !id.IsValid() || !dev.IsValid() {
			return 0, false
		}
		if int(id.Int()) >= 0 && dev.Int() != int64(G.CPU) {
			return 0, false
		}
		return int(id.Int()), true
	}
	regs := func(v reflect.Value) ([]int, bool) {
		var out []int
		for j := 0; j < v.Len(); j++ {
			r, ok := reg(v.Index(j))
			if !ok {
				return nil, false
			}
			out = append(out, r)
		}
		return out, true
	}
	for i := 0; i < ins.Len(); i++ {
		v := ins.Index(i).Elem()
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		var in instr
		in.write = -1
		var ok bool
		switch v.Type().Name() {
		case "execOp":
			in.kind = instrExec
			in.node = v.FieldByName("id").Int()
			if in.reads, ok = regs(v.FieldByName("readFrom")); !ok {
				return nil, false
			}
			if in.write, ok = reg(v.FieldByName("writeTo")); !ok {
				return nil, false
			}
		case "loadArg":
			in.kind = instrLoad
			if in.write, ok = reg(v.FieldByName("writeTo")); !ok {
				return nil, false
			}
		case "alloc":
			if in.reads, ok = regs(v.FieldByName("readFrom")); !ok {
				return nil, false
			}
			if in.write, ok = reg(v.FieldByName("writeTo")); !ok {
				return nil, false
			}
		case "letInstr":
			r, ok1 := reg(v.FieldByName("readFrom"))
			w, ok2 := reg(v.FieldByName("writeTo"))
			if !ok1 || !ok2 {
				return nil, false
			}
			in.reads, in.write = []int{r}, w
		case "readInstr":
			r, ok := reg(v.FieldByName("readFrom"))
			if !ok {
				return nil, false
			}
			in.reads = []int{r}
		case "free":
			r, ok := reg(v.FieldByName("readsFrom"))
			if !ok {
				return nil, false
			}
			in.reads = []int{r}
		case "flushInstr":
		default:
			// deviceTransport and anything newer: not a program this plan knows.
			return nil, false
		}
		prog = append(prog, in)
	}
	return prog, true
}
