package autodiff

import (
	"fmt"
	"slices"

	"gorgonia.org/tensor"
)

// concatKernel joins its float inputs along axis with one block copy per input and outer
// index. gorgonia's Concat copies element by element through iterators (about 20 ns a
// value), which made decoding with a key/value cache of thousands of positions spend
// most of each token appending one key to the cache.
type concatKernel struct {
	axis  int
	outer int   // product of the axes before axis
	inner int   // product of the axes after axis
	sizes []int // each input's size along axis
	total int   // their sum
}

func newConcatKernel(shapes []tensor.Shape, axis int) *concatKernel {
	k := &concatKernel{axis: axis, outer: 1, inner: 1}
	for _, d := range shapes[0][:axis] {
		k.outer *= d
	}
	for _, d := range shapes[0][axis+1:] {
		k.inner *= d
	}
	for _, s := range shapes {
		k.sizes = append(k.sizes, s[axis])
		k.total += s[axis]
	}
	return k
}

func (*concatKernel) opName() string      { return "Concat" }
func (k *concatKernel) hashAttrs() string { return fmt.Sprintf("%d%v", k.axis, k.sizes) }
func (k *concatKernel) arity() int        { return len(k.sizes) }
func (k *concatKernel) diffWRT() []bool   { return trues(len(k.sizes)) }
func (k *concatKernel) floatInputs() []bool {
	return trues(len(k.sizes))
}
func (k *concatKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	s := in[0].Clone()
	s[k.axis] = k.total
	return s, nil
}

func trues(n int) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = true
	}
	return b
}

func (k *concatKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	if isF32(out) {
		o := flat[float32](out)
		for i, x := range in {
			concatCopy(k, i, flat[float32](x), o, false)
		}
	} else {
		o := flat[float64](out)
		for i, x := range in {
			concatCopy(k, i, flat[float64](x), o, false)
		}
	}
	return nil
}

// backward: the gradient of input wrt is its part of the upstream gradient.
// gradReads: each input's gradient is its part of the upstream gradient.
func (k *concatKernel) gradReads(int) []bool { return reads(k.arity()) }

func (k *concatKernel) backward(wrt int, _ []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	if isF32(gout) {
		concatCopy(k, wrt, flat[float32](dst), flat[float32](gout), true)
	} else {
		concatCopy(k, wrt, flat[float64](dst), flat[float64](gout), true)
	}
	return nil
}

// concatCopy copies input i's values part into its place in full, or (back) that place
// into part.
func concatCopy[T float](k *concatKernel, i int, part, full []T, back bool) {
	lo := 0
	for _, s := range k.sizes[:i] {
		lo += s
	}
	w, fw := k.sizes[i]*k.inner, k.total*k.inner
	for o := range k.outer {
		f := full[o*fw+lo*k.inner:][:w]
		p := part[o*w:][:w]
		if back {
			copy(p, f)
		} else {
			copy(f, p)
		}
	}
}

// concatShapes returns the shapes of xs.
func concatShapes(xs []*Node) []tensor.Shape {
	shapes := make([]tensor.Shape, len(xs))
	for i, x := range xs {
		shapes[i] = x.n.Shape().Clone()
	}
	return shapes
}

// allDtype reports whether every node has dtype dt.
func allDtype(xs []*Node, dt Dtype) bool {
	return !slices.ContainsFunc(xs, func(x *Node) bool { return x.Dtype() != dt })
}
