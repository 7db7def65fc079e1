package optim

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/internal/par"
	"github.com/locusml/locus/optim/internal/kern"
	"gorgonia.org/tensor"
)

// StepKey is the State entry holding the number of steps taken, a one-element Float64
// tensor. It cannot clash with a slot entry: those have at least two dotted components.
const StepKey = "step"

// clipEps is added to the global norm before dividing, as torch.nn.utils.clip_grad_norm_.
const clipEps = 1e-6

// Optimizer updates parameters in place from their accumulated gradients.
//
// Optimizers never clear gradients: the training loop calls ZeroGrad after Step.
type Optimizer interface {
	// Step applies one update using the current gradients and the learning rate LR
	// reports. It first measures the global gradient norm (see GradNorm) and clips the
	// gradients in place when the optimizer has a MaxGradNorm. If the norm is not finite
	// it returns an error and changes nothing, not even the step count.
	Step() error
	// LR returns the base learning rate the next Step uses: the config's LR times the
	// schedule's factor at StepCount. Each group scales it by its LRScale.
	LR() float64
	// StepCount returns the number of successful Steps, including those restored by
	// LoadState. It is the schedule's position.
	StepCount() int
	// GradNorm returns the global L2 norm of all gradients seen by the last Step,
	// before clipping, or 0 before the first Step.
	GradNorm() float64
	// Params returns the optimized parameters in group order.
	Params() []*autodiff.Param
	// State returns copies of the optimizer's state as named tensors: one entry
	// "<param name>.<slot>" per parameter and slot, with the parameter's shape and
	// dtype, plus StepKey. Loading it into an optimizer built the same way over
	// parameters with the same values resumes bit-identically.
	State() map[string]*tensor.Dense
	// LoadState replaces the optimizer's state with a map produced by State. Every
	// expected entry must be present with the parameter's shape, and no other entry may
	// be; Float32 and Float64 entries are converted to the parameter's dtype. On error
	// nothing is changed.
	LoadState(state map[string]*tensor.Dense) error
}

// Group is a set of parameters that share hyperparameters, like a torch param group.
type Group struct {
	// Params are the parameters of the group. A parameter may be in one group only.
	Params []*autodiff.Param
	// LRScale multiplies the optimizer's learning rate for this group. 0 means 1.
	LRScale float64
	// WeightDecay, when not nil, replaces the config's WeightDecay for this group, e.g.
	// WeightDecay: new(0.0) for a group without decay.
	WeightDecay *float64
}

// All returns a single group holding params with the config's hyperparameters.
func All(params []*autodiff.Param) []Group { return []Group{{Params: params}} }

// paramState is one parameter with its group's hyperparameters and its slot buffers,
// stored in the parameter's dtype.
type paramState struct {
	p       *autodiff.Param
	lrScale float64
	wd      float64
	grad    *tensor.Dense // the Dense g32/g64 were taken from
	x32     []float32
	g32     []float32
	s32     [][]float32 // one per slot
	x64     []float64
	g64     []float64
	s64     [][]float64
}

// size returns the number of elements of the parameter.
func (st *paramState) size() int {
	if st.x32 != nil {
		return len(st.x32)
	}
	return len(st.x64)
}

// refreshGrad re-reads the gradient's backing slice if the Param's gradient tensor was
// replaced; reading it every step would allocate.
func (st *paramState) refreshGrad() {
	if g := st.p.Grad(); g != st.grad {
		st.grad = g
		if st.x32 != nil {
			st.g32 = st.p.GradFloat32s()
		} else {
			st.g64 = st.p.GradFloat64s()
		}
	}
}

// rule is an optimizer's update, applied to elements lo..hi−1 of one parameter at step
// t (1-based) with the parameter's learning rate lr (schedule and group scale applied).
// Every rule is element-wise, so that Step may split a parameter anywhere (updateAll).
type rule interface {
	update(st *paramState, lr float64, t, lo, hi int)
}

// base holds what every optimizer shares: groups, schedule, clipping, step count and
// the slot buffers. Optimizers embed it and supply their rule.
type base struct {
	name        string // for error messages, e.g. "adam"
	lr          float64
	sched       Schedule
	maxGradNorm float64
	slots       []string
	params      []*paramState
	rule        rule
	step        int
	gradNorm    float64
}

// common are the settings every config has, its defaults applied; defaultLR is the
// config's default learning rate, for messages.
type common struct {
	lr          float64
	weightDecay float64
	sched       Schedule
	maxGradNorm float64
	defaultLR   float64
}

// validate checks the shared settings.
func (c common) validate(name string) error {
	if !(c.lr > 0) || math.IsInf(c.lr, 0) {
		return fmt.Errorf("%s: LR %v, want a finite value > 0 (0 means %v)", name, c.lr, c.defaultLR)
	}
	if !(c.weightDecay >= 0) || math.IsInf(c.weightDecay, 0) {
		return fmt.Errorf("%s: WeightDecay %v, want a finite value >= 0", name, c.weightDecay)
	}
	if !(c.maxGradNorm >= 0) || math.IsInf(c.maxGradNorm, 0) {
		return fmt.Errorf("%s: MaxGradNorm %v, want a finite value > 0, or 0 for no clipping", name, c.maxGradNorm)
	}
	if v, ok := c.sched.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("%s: schedule: %w", name, err)
		}
	}
	return nil
}

// checkEps checks a denominator's Eps once its default def is applied.
func checkEps(name string, eps, def float64) error {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("%s: Eps %v, want a finite value > 0 (0 means %v)", name, eps, def)
	}
	return nil
}

// init allocates one buffer per slot per parameter, filled with fill, for settings c
// that the optimizer's validate accepted.
func (b *base) init(name string, groups []Group, c common, slots []string, fill float64, r rule) error {
	b.name, b.slots, b.rule = name, slots, r
	b.lr, b.maxGradNorm = c.lr, c.maxGradNorm
	b.sched = c.sched
	if b.sched == nil {
		b.sched = Constant{}
	}
	seen := map[string]bool{}
	for gi, g := range groups {
		scale := g.LRScale
		if scale == 0 {
			scale = 1
		}
		if !(scale > 0) || math.IsInf(scale, 0) {
			return fmt.Errorf("%s: group %d: invalid LRScale %v (want > 0)", name, gi, g.LRScale)
		}
		wd := c.weightDecay
		if g.WeightDecay != nil {
			wd = *g.WeightDecay
			if !(wd >= 0) || math.IsInf(wd, 0) {
				return fmt.Errorf("%s: group %d: invalid weight decay %v (want a finite value >= 0)", name, gi, wd)
			}
		}
		for _, p := range g.Params {
			if p == nil {
				return fmt.Errorf("%s: group %d: nil parameter", name, gi)
			}
			if seen[p.Name()] {
				return fmt.Errorf("%s: parameter %q appears twice", name, p.Name())
			}
			seen[p.Name()] = true
			st := &paramState{p: p, lrScale: scale, wd: wd, grad: p.Grad()}
			switch p.Dtype() {
			case autodiff.Float32:
				st.x32, st.g32 = p.Float32s(), p.GradFloat32s()
				for range slots {
					s := make([]float32, p.Size())
					if fill != 0 {
						for i := range s {
							s[i] = float32(fill)
						}
					}
					st.s32 = append(st.s32, s)
				}
			case autodiff.Float64:
				st.x64, st.g64 = p.Float64s(), p.GradFloat64s()
				for range slots {
					s := make([]float64, p.Size())
					if fill != 0 {
						for i := range s {
							s[i] = fill
						}
					}
					st.s64 = append(st.s64, s)
				}
			default:
				return fmt.Errorf("%s: parameter %q: unsupported dtype %v", name, p.Name(), p.Dtype())
			}
			b.params = append(b.params, st)
		}
	}
	if len(b.params) == 0 {
		return fmt.Errorf("%s: no parameters to optimize", name)
	}
	return nil
}

// LR returns the base learning rate the next Step uses: the config's LR times the
// schedule's factor at StepCount. Each group scales it by its LRScale.
func (b *base) LR() float64 { return b.lr * b.sched.Factor(b.step) }

// StepCount returns the number of successful Steps, including restored ones.
func (b *base) StepCount() int { return b.step }

// GradNorm returns the global L2 norm of the gradients seen by the last Step, before
// clipping, or 0 before the first Step.
func (b *base) GradNorm() float64 { return b.gradNorm }

// Params returns the optimized parameters in group order.
func (b *base) Params() []*autodiff.Param {
	ps := make([]*autodiff.Param, len(b.params))
	for i, st := range b.params {
		ps[i] = st.p
	}
	return ps
}

// Step applies one update from the current gradients; see Optimizer.Step.
func (b *base) Step() error {
	factor := b.sched.Factor(b.step)
	if !(factor >= 0) || math.IsInf(factor, 0) {
		return fmt.Errorf("%s: step %d: schedule factor %v is not a finite value >= 0", b.name, b.step, factor)
	}
	lr := b.lr * factor
	var sumSq float64
	for _, st := range b.params {
		st.refreshGrad()
		if st.x32 != nil {
			sumSq += sumSquares(st.g32)
		} else {
			sumSq += sumSquares(st.g64)
		}
	}
	norm := math.Sqrt(sumSq)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return fmt.Errorf("%s: step %d: gradient norm is %v; parameters left unchanged", b.name, b.step, norm)
	}
	b.gradNorm = norm
	if b.maxGradNorm > 0 {
		if coef := b.maxGradNorm / (norm + clipEps); coef < 1 {
			for _, st := range b.params {
				if st.x32 != nil {
					scale(st.g32, coef)
				} else {
					scale(st.g64, coef)
				}
			}
		}
	}
	t := b.step + 1
	b.updateAll(lr, t)
	b.step = t
	return nil
}

// updateAll applies the rule to every parameter: in one parallel section over all the
// parameters' elements in equal shares, one share per goroutine (parameters split
// where a share ends), or serially when there are fewer than parallelMin elements. The
// rules are element-wise, so the bits do not depend on the split.
func (b *base) updateAll(lr float64, t int) {
	total := 0
	for _, st := range b.params {
		total += st.size()
	}
	workers := runtime.GOMAXPROCS(0)
	if total < parallelMin || workers < 2 {
		for _, st := range b.params {
			b.rule.update(st, lr*st.lrScale, t, 0, st.size())
		}
		return
	}
	par.For(workers, 1, func(c, _ int) {
		lo, hi := c*total/workers, (c+1)*total/workers
		off := 0
		for _, st := range b.params {
			n := st.size()
			if s, e := max(lo, off), min(hi, off+n); s < e {
				b.rule.update(st, lr*st.lrScale, t, s-off, e-off)
			}
			off += n
		}
	})
}

// State returns copies of the state as named tensors; see Optimizer.State.
func (b *base) State() map[string]*tensor.Dense {
	m := make(map[string]*tensor.Dense, len(b.params)*len(b.slots)+1)
	m[StepKey] = tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{float64(b.step)}))
	for _, st := range b.params {
		shape := st.p.Shape()
		for k, slot := range b.slots {
			var backing any
			if st.x32 != nil {
				backing = append([]float32(nil), st.s32[k]...)
			} else {
				backing = append([]float64(nil), st.s64[k]...)
			}
			m[st.p.Name()+"."+slot] = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))
		}
	}
	return m
}

// LoadState replaces the state with one produced by State; see Optimizer.LoadState.
func (b *base) LoadState(state map[string]*tensor.Dense) error {
	var errs []error
	step, err := readStep(state[StepKey])
	if err != nil {
		errs = append(errs, err)
	}
	want := map[string]bool{StepKey: true}
	for _, st := range b.params {
		for _, slot := range b.slots {
			key := st.p.Name() + "." + slot
			want[key] = true
			t, ok := state[key]
			switch {
			case !ok || t == nil:
				errs = append(errs, fmt.Errorf("missing tensor %q (shape %v)", key, tensor.Shape(st.p.Shape())))
			case !t.Shape().Eq(tensor.Shape(st.p.Shape())):
				errs = append(errs, fmt.Errorf("tensor %q has shape %v, want %v (the shape of parameter %q)", key, t.Shape(), tensor.Shape(st.p.Shape()), st.p.Name()))
			case t.Dtype() != tensor.Float32 && t.Dtype() != tensor.Float64:
				errs = append(errs, fmt.Errorf("tensor %q has dtype %v, want float32 or float64", key, t.Dtype()))
			}
		}
	}
	var unknown []string
	for key := range state {
		if !want[key] {
			unknown = append(unknown, key)
		}
	}
	sort.Strings(unknown)
	for _, key := range unknown {
		var shape tensor.Shape
		if t := state[key]; t != nil {
			shape = t.Shape()
		}
		errs = append(errs, fmt.Errorf("unknown tensor %q (shape %v): no such parameter or slot in this %s optimizer", key, shape, b.name))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: load state: %w", b.name, errors.Join(errs...))
	}
	for _, st := range b.params {
		for k, slot := range b.slots {
			src := state[st.p.Name()+"."+slot].Data()
			if st.x32 != nil {
				copyInto(st.s32[k], src)
			} else {
				copyInto(st.s64[k], src)
			}
		}
	}
	b.step = step
	return nil
}

// readStep decodes the StepKey entry.
func readStep(t *tensor.Dense) (int, error) {
	if t == nil {
		return 0, fmt.Errorf("missing tensor %q (shape (1))", StepKey)
	}
	if t.Shape().TotalSize() != 1 {
		return 0, fmt.Errorf("tensor %q has shape %v, want (1)", StepKey, t.Shape())
	}
	var v float64
	switch d := t.Data().(type) {
	case []float64:
		v = d[0]
	case []float32:
		v = float64(d[0])
	case []int64:
		v = float64(d[0])
	case []int:
		v = float64(d[0])
	case float64:
		v = d
	default:
		return 0, fmt.Errorf("tensor %q has dtype %v, want float64", StepKey, t.Dtype())
	}
	if !(v >= 0) || v != math.Trunc(v) || v > 1<<53 {
		return 0, fmt.Errorf("tensor %q holds %v, want a non-negative integer", StepKey, v)
	}
	return int(v), nil
}

// float is the element type of parameters, gradients and slots.
type float interface{ ~float32 | ~float64 }

// copyInto converts src ([]float32 or []float64 of len(dst)) into dst.
func copyInto[T float](dst []T, src any) {
	switch s := src.(type) {
	case []float32:
		for i := range dst {
			dst[i] = T(s[i])
		}
	case []float64:
		for i := range dst {
			dst[i] = T(s[i])
		}
	}
}

// sumSquares returns Σ x² accumulated in float64, over two goroutines for large x.
func sumSquares[T float](x []T) float64 {
	if len(x) < parallelMin {
		return sumSquaresSerial(x) // no closure: small steps allocate nothing
	}
	var parts [2]float64
	chunks(len(x), func(c, lo, hi int) { parts[c] = sumSquaresSerial(x[lo:hi]) })
	return parts[0] + parts[1]
}

// sumSquaresSerial keeps four partial sums so that the additions pipeline; float32 goes
// to kern.SumSquares32 (sixteen partial sums, vectorised, same bits on every CPU).
func sumSquaresSerial[T float](x []T) float64 {
	if x32, ok := any(x).([]float32); ok {
		return kern.SumSquares32(x32)
	}
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a, b, c, d := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// parallelMin is the size from which element-wise updates use two goroutines.
const parallelMin = 1 << 15

// chunks calls fn(c, lo, hi) on the two halves of [0, n) in parallel (c = 0, 1), on the
// internal/par pool. Element-wise updates give the same bits as one serial pass.
func chunks(n int, fn func(c, lo, hi int)) {
	mid := n / 2
	par.For(2, 1, func(c, _ int) {
		if c == 0 {
			fn(0, 0, mid)
		} else {
			fn(1, mid, n)
		}
	})
}

// scale multiplies x by c, with c rounded to T first as torch does.
func scale[T float](x []T, c float64) {
	ct := T(c)
	for i := range x {
		x[i] *= ct
	}
}
