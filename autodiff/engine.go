package autodiff

import (
	"sync/atomic"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/vmath"
)

// sumEngine is the tensor engine of Model's tape machines: gorgonia's own, except that
// a float32 Add of two dense tensors of one shape runs on the vector loops. Every such
// Add in a Locus graph is gorgonia's: Backprop sums the gradient contributions of a node
// used more than once with it (Locus's own ops add in their kernels); StdEng did it in a
// scalar loop (AddRecvF32, 2.5–5.6% of charlm's CPU profile). The same float32 addition
// per element, so the same bits.
type sumEngine struct {
	G.StandardEngine
}

// sumEngineCalls counts the Adds done by the vector loops, for tests.
var sumEngineCalls atomic.Int64

// useSumEngine gives Model's machines sumEngine; tests turn it off to compare.
var useSumEngine = true

// Add computes a + b as tensor.StdEng.Add does: into the reuse tensor (WithReuse), into
// a (UseUnsafe), or into a new tensor.
func (e sumEngine) Add(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	if r := addFloat32(a, b, opts); r != nil {
		return r, nil
	}
	return e.StandardEngine.Add(a, b, opts...)
}

// addFloat32 returns a + b computed by the vector loops, or nil when the operands or
// options are not the plain case (float32 dense tensors of one shape without iterators;
// a reuse tensor of that shape, or UseUnsafe), which StdEng then does.
func addFloat32(a, b tensor.Tensor, opts []tensor.FuncOpt) tensor.Tensor {
	ad, ok := a.(*tensor.Dense)
	if !ok || !plainFloat32(ad) {
		return nil
	}
	bd, ok := b.(*tensor.Dense)
	if !ok || !plainFloat32(bd) || !ad.Shape().Eq(bd.Shape()) {
		return nil
	}
	fo := tensor.ParseFuncOpts(opts...)
	reuse, incr := fo.IncrReuse()
	switch {
	case incr || fo.As() != (tensor.Dtype{}):
		return nil
	case reuse != nil:
		rd, ok := reuse.(*tensor.Dense)
		if !ok || !plainFloat32(rd) || !rd.Shape().Eq(ad.Shape()) {
			return nil
		}
		vmath.AddTo(ad.Float32s(), bd.Float32s(), rd.Float32s())
		sumEngineCalls.Add(1)
		return rd
	case !fo.Safe():
		vmath.Add(ad.Float32s(), bd.Float32s())
		sumEngineCalls.Add(1)
		return ad
	}
	return nil
}

// plainFloat32 reports whether t is a float32 tensor whose elements are its backing
// slice in row-major order.
func plainFloat32(t *tensor.Dense) bool {
	return t.Dtype() == Float32 && !t.RequiresIterator() && !t.IsView() && t.DataOrder().IsRowMajor() && len(t.Float32s()) == t.Shape().TotalSize()
}
