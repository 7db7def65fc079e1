package autodiff

import (
	"fmt"
	"math"
	"strconv"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/vmath"
)

// Fused versions of the basic ops (elementwise arithmetic, constants, reductions,
// Transpose, Slice). gorgonia's ops allocate a new output on every run, and their
// gradients are built from several more such ops; these reuse their buffers across runs
// and have one backward op per input (none where the gradient is the upstream gradient
// itself).

// serialBelow is the size under which the elementwise kernels run inline: the closures
// that blocks needs cost an allocation each.
const serialBelow = 1 << 14

// binOp is an elementwise binary operation of binaryKernel.
type binOp uint8

const (
	binAdd binOp = iota
	binSub
	binMul
	binDiv
)

var binNames = [...]string{binAdd: "Add", binSub: "Sub", binMul: "Mul", binDiv: "Div"}

// binaryKernel computes a ∘ b for two tensors of the same shape.
type binaryKernel struct{ op binOp }

func (k binaryKernel) opName() string                                 { return binNames[k.op] }
func (binaryKernel) hashAttrs() string                                { return "" }
func (binaryKernel) arity() int                                       { return 2 }
func (binaryKernel) diffWRT() []bool                                  { return []bool{true, true} }
func (binaryKernel) floatInputs() []bool                              { return []bool{true, true} }
func (binaryKernel) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }

func (k binaryKernel) identityGrad(wrt int) bool {
	return k.op == binAdd || (k.op == binSub && wrt == 0)
}

func (k binaryKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	if isF32(in[0]) {
		binaryFwd(k.op, flat[float32](in[0]), flat[float32](in[1]), flat[float32](out))
	} else {
		binaryFwd(k.op, flat[float64](in[0]), flat[float64](in[1]), flat[float64](out))
	}
	return nil
}

func binaryFwd[T float](op binOp, a, b, y []T) {
	if len(a) < serialBelow {
		binaryFwdRange(op, a, b, y)
		return
	}
	blocks(len(a), func(lo, hi int) { binaryFwdRange(op, a[lo:hi], b[lo:hi], y[lo:hi]) })
}

func binaryFwdRange[T float](op binOp, a, b, y []T) {
	b, y = b[:len(a)], y[:len(a)]
	if a32, ok := any(a).([]float32); ok && op == binAdd {
		// The residual sums of every Transformer block: the same float32 additions on
		// the vector kernel.
		vmath.AddTo(a32, any(b).([]float32), any(y).([]float32))
		return
	}
	switch op {
	case binAdd:
		for i, v := range a {
			y[i] = v + b[i]
		}
	case binSub:
		for i, v := range a {
			y[i] = v - b[i]
		}
	case binMul:
		for i, v := range a {
			y[i] = v * b[i]
		}
	case binDiv:
		for i, v := range a {
			y[i] = v / b[i]
		}
	}
}

// gradReads: a sum's or difference's gradients read nothing, a product's the other
// factor; a quotient's read both operands and the output.
func (k binaryKernel) gradReads(wrt int) []bool {
	switch k.op {
	case binAdd, binSub:
		return reads(2)
	case binMul:
		return reads(2, 1-wrt)
	}
	return reads(2, 0, 1, 2)
}

func (k binaryKernel) backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	if isF32(in[0]) {
		binaryBwd(k.op, wrt, flat[float32](in[0]), flat[float32](in[1]), flat[float32](out), flat[float32](gout), flat[float32](dst))
	} else {
		binaryBwd(k.op, wrt, flat[float64](in[0]), flat[float64](in[1]), flat[float64](out), flat[float64](gout), flat[float64](dst))
	}
	return nil
}

func binaryBwd[T float](op binOp, wrt int, a, b, y, g, d []T) {
	if len(a) < serialBelow {
		binaryBwdRange(op, wrt, a, b, y, g, d)
		return
	}
	blocks(len(a), func(lo, hi int) { binaryBwdRange(op, wrt, a[lo:hi], b[lo:hi], y[lo:hi], g[lo:hi], d[lo:hi]) })
}

// binaryBwdRange sets d to the gradient with respect to input wrt: for a + b and a − b
// it is ±g, for a·b it is g·b or g·a, for a/b it is g/b or −g·(a/b)/b.
func binaryBwdRange[T float](op binOp, wrt int, a, b, y, g, d []T) {
	b, y, g, d = b[:len(a)], y[:len(a)], g[:len(a)], d[:len(a)]
	switch {
	case op == binAdd || (op == binSub && wrt == 0):
		copy(d, g)
	case op == binSub:
		for i, v := range g {
			d[i] = -v
		}
	case op == binMul && wrt == 0:
		for i, v := range g {
			d[i] = v * b[i]
		}
	case op == binMul:
		for i, v := range g {
			d[i] = v * a[i]
		}
	case wrt == 0: // Div
		for i, v := range g {
			d[i] = v / b[i]
		}
	default:
		for i, v := range g {
			d[i] = -v * y[i] / b[i]
		}
	}
}

// constKernel computes x·c (mul) or x + c for a constant c.
type constKernel struct {
	name string
	mul  bool
	c    float64
}

func (k constKernel) opName() string { return k.name }
func (k constKernel) hashAttrs() string {
	op := "+"
	if k.mul {
		op = "*"
	}
	return op + strconv.FormatFloat(k.c, 'g', -1, 64)
}
func (constKernel) arity() int                                       { return 1 }
func (constKernel) diffWRT() []bool                                  { return []bool{true} }
func (constKernel) floatInputs() []bool                              { return []bool{true} }
func (constKernel) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }
func (k constKernel) identityGrad(int) bool                          { return !k.mul }

func (k constKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	if isF32(in[0]) {
		constFwd(k.mul, float32(k.c), flat[float32](in[0]), flat[float32](out))
	} else {
		constFwd(k.mul, k.c, flat[float64](in[0]), flat[float64](out))
	}
	return nil
}

func constFwd[T float](mul bool, c T, x, y []T) {
	if len(x) < serialBelow {
		constRange(mul, c, x, y)
		return
	}
	blocks(len(x), func(lo, hi int) { constRange(mul, c, x[lo:hi], y[lo:hi]) })
}

func constRange[T float](mul bool, c T, x, y []T) {
	y = y[:len(x)]
	if mul {
		for i, v := range x {
			y[i] = v * c
		}
		return
	}
	for i, v := range x {
		y[i] = v + c
	}
}

// gradReads: the gradient is the upstream gradient scaled.
func (k constKernel) gradReads(int) []bool { return reads(1) }

func (k constKernel) backward(_ int, _ []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	if !k.mul {
		copyData(dst, gout)
		return nil
	}
	if isF32(gout) {
		constFwd(true, float32(k.c), flat[float32](gout), flat[float32](dst))
	} else {
		constFwd(true, k.c, flat[float64](gout), flat[float64](dst))
	}
	return nil
}

// mulScalarKernel computes x·s for a one-element s (shape [] or [1]).
type mulScalarKernel struct{}

func (mulScalarKernel) opName() string                                   { return "MulScalar" }
func (mulScalarKernel) hashAttrs() string                                { return "" }
func (mulScalarKernel) arity() int                                       { return 2 }
func (mulScalarKernel) diffWRT() []bool                                  { return []bool{true, true} }
func (mulScalarKernel) floatInputs() []bool                              { return []bool{true, true} }
func (mulScalarKernel) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }

func (mulScalarKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	if isF32(in[0]) {
		constFwd(true, flat[float32](in[1])[0], flat[float32](in[0]), flat[float32](out))
	} else {
		constFwd(true, flat[float64](in[1])[0], flat[float64](in[0]), flat[float64](out))
	}
	return nil
}

// gradReads: each operand's gradient reads the other.
func (mulScalarKernel) gradReads(wrt int) []bool { return reads(2, 1-wrt) }

func (mulScalarKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	if isF32(in[0]) {
		mulScalarBwd(wrt, flat[float32](in[0]), flat[float32](in[1])[0], flat[float32](gout), flat[float32](dst))
	} else {
		mulScalarBwd(wrt, flat[float64](in[0]), flat[float64](in[1])[0], flat[float64](gout), flat[float64](dst))
	}
	return nil
}

// mulScalarBwd sets d = g·s (wrt x) or d[0] = Σ g⊙x (wrt s, accumulated in float64).
func mulScalarBwd[T float](wrt int, x []T, s T, g, d []T) {
	if wrt == 0 {
		constFwd(true, s, g, d)
		return
	}
	var acc float64
	for i, v := range x {
		acc += float64(g[i]) * float64(v)
	}
	d[0] = T(acc)
}

// sumAll returns Σx in float64. float32 values are summed in float64 with several
// accumulators (a single chain of dependent additions would be latency-bound), which is
// exact enough; float64 values (gradient checks, tests) with Neumaier's compensated
// summation, so that the rounding of a large sum does not swamp finite differences.
func sumAll[T float](x []T) float64 {
	var z T
	if _, ok := any(z).(float64); ok {
		return sumCompensated(x)
	}
	var s0, s1, s2, s3, s4, s5, s6, s7 float64
	i := 0
	for ; i+8 <= len(x); i += 8 {
		v := x[i : i+8 : i+8]
		s0 += float64(v[0])
		s1 += float64(v[1])
		s2 += float64(v[2])
		s3 += float64(v[3])
		s4 += float64(v[4])
		s5 += float64(v[5])
		s6 += float64(v[6])
		s7 += float64(v[7])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

func sumCompensated[T float](x []T) float64 {
	var s, c float64
	for _, v := range x {
		f := float64(v)
		t := s + f
		if math.Abs(s) >= math.Abs(f) {
			c += (s - t) + f
		} else {
			c += (f - t) + s
		}
		s = t
	}
	return s + c
}

// reducePlan walks a tensor whose axes are split into runs of reduced and kept axes:
// sizes are the merged runs (size-1 axes dropped), outStride the stride of each run in
// the output (0 for reduced runs).
type reducePlan struct {
	sizes     []int
	reduced   []bool
	outStride []int
	n, outN   int
}

func newReducePlan(shape tensor.Shape, axes []int) reducePlan {
	red := make([]bool, len(shape))
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
	}
	for _, a := range axes {
		red[a] = true
	}
	p := reducePlan{n: shape.TotalSize(), outN: 1}
	for i, d := range shape {
		if d == 1 {
			continue
		}
		if last := len(p.sizes) - 1; last >= 0 && p.reduced[last] == red[i] {
			p.sizes[last] *= d
			continue
		}
		p.sizes = append(p.sizes, d)
		p.reduced = append(p.reduced, red[i])
	}
	if len(p.sizes) == 0 {
		p.sizes, p.reduced = []int{1}, []bool{true}
	}
	p.outStride = make([]int, len(p.sizes))
	for i := len(p.sizes) - 1; i >= 0; i-- {
		if !p.reduced[i] {
			p.outStride[i] = p.outN
			p.outN *= p.sizes[i]
		}
	}
	return p
}

// reduceKernel implements Sum and Mean over a set of axes (all if none), dropping them.
type reduceKernel struct {
	mean bool
	axes []int
	plan reducePlan
	acc  []float64
	part []float64
}

func newReduceKernel(mean bool, shape tensor.Shape, axes []int) *reduceKernel {
	return &reduceKernel{mean: mean, axes: append([]int(nil), axes...), plan: newReducePlan(shape, axes)}
}

func (k *reduceKernel) opName() string {
	if k.mean {
		return "Mean"
	}
	return "Sum"
}
func (k *reduceKernel) hashAttrs() string { return fmt.Sprint(k.axes) }
func (*reduceKernel) arity() int          { return 1 }
func (*reduceKernel) diffWRT() []bool     { return []bool{true} }
func (*reduceKernel) floatInputs() []bool { return []bool{true} }

func (k *reduceKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	red := make([]bool, len(in[0]))
	for _, a := range k.axes {
		red[a] = true
	}
	var out tensor.Shape
	if len(k.axes) > 0 {
		for i, d := range in[0] {
			if !red[i] {
				out = append(out, d)
			}
		}
	}
	if len(out) == 0 {
		return tensor.ScalarShape(), nil
	}
	return out, nil
}

// scale is the factor of the result: 1/count for a mean.
func (k *reduceKernel) scale() float64 {
	if !k.mean || k.plan.outN == 0 {
		return 1
	}
	return float64(k.plan.outN) / float64(k.plan.n)
}

func (k *reduceKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	if isF32(in[0]) {
		reduceFwd(k, flat[float32](in[0]), flat[float32](out))
	} else {
		reduceFwd(k, flat[float64](in[0]), flat[float64](out))
	}
	return nil
}

func reduceFwd[T float](k *reduceKernel, x, y []T) {
	p := &k.plan
	if len(p.sizes) == 1 && p.reduced[0] { // everything
		y[0] = T(parallelSum(k, x[:p.n]) * k.scale())
		return
	}
	if len(k.acc) != p.outN {
		k.acc = make([]float64, p.outN)
	}
	acc := k.acc
	clear(acc)
	last, lastRed := p.sizes[len(p.sizes)-1], p.reduced[len(p.sizes)-1]
	p.forRows(func(base, off int) {
		row := x[base : base+last]
		if lastRed {
			acc[off] += sumAll(row)
		} else {
			a := acc[off : off+last]
			for j, v := range row {
				a[j] += float64(v)
			}
		}
	})
	s := k.scale()
	for i, v := range acc {
		y[i] = T(v * s)
	}
}

// parallelSum sums x, in parallel chunks for a large x.
func parallelSum[T float](k *reduceKernel, x []T) float64 {
	const chunk = 1 << 15
	if len(x) <= chunk {
		return sumAll(x)
	}
	nc := (len(x) + chunk - 1) / chunk
	if len(k.part) != nc {
		k.part = make([]float64, nc)
	}
	part := k.part
	parallelFor(nc, chunk, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			part[c] = sumAll(x[c*chunk : min((c+1)*chunk, len(x))])
		}
	})
	var s float64
	for _, v := range part {
		s += v
	}
	return s
}

// gradReads: the gradient is the upstream gradient spread over the reduced axes.
func (k *reduceKernel) gradReads(int) []bool { return reads(1) }

func (k *reduceKernel) backward(_ int, _ []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	if isF32(dst) {
		reduceBwd(k, flat[float32](gout), flat[float32](dst))
	} else {
		reduceBwd(k, flat[float64](gout), flat[float64](dst))
	}
	return nil
}

// reduceBwd broadcasts the output gradient g back over the reduced axes.
func reduceBwd[T float](k *reduceKernel, g, d []T) {
	p := &k.plan
	s := k.scale()
	if len(p.sizes) == 1 && p.reduced[0] {
		v := T(float64(g[0]) * s)
		d = d[:p.n]
		if len(d) < serialBelow {
			fill(d, v)
		} else {
			blocks(len(d), func(lo, hi int) { fill(d[lo:hi], v) })
		}
		return
	}
	last, lastRed := p.sizes[len(p.sizes)-1], p.reduced[len(p.sizes)-1]
	p.forRows(func(base, off int) {
		row := d[base : base+last]
		if lastRed {
			fill(row, T(float64(g[off])*s))
		} else if s == 1 {
			copy(row, g[off:off+last])
		} else {
			for j, v := range g[off : off+last] {
				row[j] = T(float64(v) * s)
			}
		}
	})
}

// forRows calls fn for every row (run of the last axis) of the input, with the row's
// start in the input and the offset of its output element or row.
func (p *reducePlan) forRows(fn func(base, off int)) {
	m := len(p.sizes)
	last := p.sizes[m-1]
	var idxBuf [8]int
	var idx []int
	if m-1 > len(idxBuf) {
		idx = make([]int, m-1)
	} else {
		idx = idxBuf[:m-1]
	}
	off := 0
	for base := 0; base < p.n; base += last {
		fn(base, off)
		for d := m - 2; d >= 0; d-- {
			idx[d]++
			off += p.outStride[d]
			if idx[d] < p.sizes[d] {
				break
			}
			off -= p.outStride[d] * p.sizes[d]
			idx[d] = 0
		}
	}
}

func fill[T float](d []T, v T) {
	for i := range d {
		d[i] = v
	}
}

// permutePlan copies a tensor into a permutation of its axes: out axis i is in axis
// perm[i]. Axes that stay adjacent are merged and size-1 axes dropped.
type permutePlan struct {
	outSizes []int // merged output axes
	inStride []int // input stride of each merged output axis
}

func newPermutePlan(shape tensor.Shape, perm []int) permutePlan {
	strides := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = s
		s *= shape[i]
	}
	var p permutePlan
	prev := -1 // input axis of the last merged output axis
	for _, a := range perm {
		if shape[a] == 1 {
			continue
		}
		if last := len(p.outSizes) - 1; last >= 0 && prev >= 0 && strides[prev] == strides[a]*shape[a] {
			// a directly follows the previous axis in the input: merge
			p.outSizes[last] *= shape[a]
			p.inStride[last] = strides[a]
		} else {
			p.outSizes = append(p.outSizes, shape[a])
			p.inStride = append(p.inStride, strides[a])
		}
		prev = a
	}
	if len(p.outSizes) == 0 {
		p.outSizes, p.inStride = []int{1}, []int{1}
	}
	return p
}

func permuteCopy[T float](p *permutePlan, x, y []T) {
	m := len(p.outSizes)
	last, ls := p.outSizes[m-1], p.inStride[m-1]
	var idxBuf [8]int
	var idx []int
	if m-1 > len(idxBuf) {
		idx = make([]int, m-1)
	} else {
		idx = idxBuf[:m-1]
	}
	off := 0
	for base := 0; base < len(y); base += last {
		row := y[base : base+last]
		if ls == 1 {
			copy(row, x[off:off+last])
		} else {
			for j := range row {
				row[j] = x[off+j*ls]
			}
		}
		for d := m - 2; d >= 0; d-- {
			idx[d]++
			off += p.inStride[d]
			if idx[d] < p.outSizes[d] {
				break
			}
			off -= p.inStride[d] * p.outSizes[d]
			idx[d] = 0
		}
	}
}

// transposeKernel permutes the axes of its input.
type transposeKernel struct {
	perm      []int
	fwd, bwd  permutePlan
	out       tensor.Shape
	inputDims tensor.Shape
}

func newTransposeKernel(shape tensor.Shape, perm []int) *transposeKernel {
	inv := make([]int, len(perm))
	out := make(tensor.Shape, len(perm))
	for i, a := range perm {
		inv[a] = i
		out[i] = shape[a]
	}
	return &transposeKernel{perm: append([]int(nil), perm...), fwd: newPermutePlan(shape, perm), bwd: newPermutePlan(out, inv), out: out, inputDims: shape.Clone()}
}

func (*transposeKernel) opName() string                                  { return "Transpose" }
func (k *transposeKernel) hashAttrs() string                             { return fmt.Sprint(k.perm) }
func (*transposeKernel) arity() int                                      { return 1 }
func (*transposeKernel) diffWRT() []bool                                 { return []bool{true} }
func (*transposeKernel) floatInputs() []bool                             { return []bool{true} }
func (k *transposeKernel) outShape([]tensor.Shape) (tensor.Shape, error) { return k.out.Clone(), nil }

func (k *transposeKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	if isF32(in[0]) {
		permuteCopy(&k.fwd, flat[float32](in[0]), flat[float32](out))
	} else {
		permuteCopy(&k.fwd, flat[float64](in[0]), flat[float64](out))
	}
	return nil
}

// gradReads: the gradient is the upstream gradient transposed back.
func (k *transposeKernel) gradReads(int) []bool { return reads(1) }

func (k *transposeKernel) backward(_ int, _ []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	if isF32(gout) {
		permuteCopy(&k.bwd, flat[float32](gout), flat[float32](dst))
	} else {
		permuteCopy(&k.bwd, flat[float64](gout), flat[float64](dst))
	}
	return nil
}

// sliceKernel copies x[lo:hi] along axis, keeping the axis.
type sliceKernel struct {
	axis, lo, hi int
	outer, size  int // product of the axes before axis; size of axis
	inner        int // product of the axes after axis
}

func newSliceKernel(shape tensor.Shape, axis, lo, hi int) *sliceKernel {
	k := &sliceKernel{axis: axis, lo: lo, hi: hi, outer: 1, size: shape[axis], inner: 1}
	for _, d := range shape[:axis] {
		k.outer *= d
	}
	for _, d := range shape[axis+1:] {
		k.inner *= d
	}
	return k
}

func (*sliceKernel) opName() string      { return "Slice" }
func (k *sliceKernel) hashAttrs() string { return fmt.Sprintf("[%d:%d:%d]", k.axis, k.lo, k.hi) }
func (*sliceKernel) arity() int          { return 1 }
func (*sliceKernel) diffWRT() []bool     { return []bool{true} }
func (*sliceKernel) floatInputs() []bool { return []bool{true} }
func (k *sliceKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	s := in[0].Clone()
	s[k.axis] = k.hi - k.lo
	return s, nil
}

func (k *sliceKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	if isF32(in[0]) {
		sliceCopy(k, flat[float32](in[0]), flat[float32](out), false)
	} else {
		sliceCopy(k, flat[float64](in[0]), flat[float64](out), false)
	}
	return nil
}

// gradReads: the gradient is the upstream gradient placed in the slice.
func (k *sliceKernel) gradReads(int) []bool { return reads(1) }

func (k *sliceKernel) backward(_ int, _ []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	if isF32(gout) {
		sliceCopy(k, flat[float32](dst), flat[float32](gout), true)
	} else {
		sliceCopy(k, flat[float64](dst), flat[float64](gout), true)
	}
	return nil
}

// sliceCopy copies the slice of full into part, or (back) part into the slice of full,
// zeroing the rest of full.
func sliceCopy[T float](k *sliceKernel, full, part []T, back bool) {
	if back {
		clear(full)
	}
	w := (k.hi - k.lo) * k.inner
	for o := range k.outer {
		f := full[(o*k.size+k.lo)*k.inner:][:w]
		p := part[o*w:][:w]
		if back {
			copy(f, p)
		} else {
			copy(p, f)
		}
	}
}
