package autodiff

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/vmath"
)

// gatherKernel implements Graph.Gather: out[i, :] = table[ids[i], :].
type gatherKernel struct{}

func (gatherKernel) opName() string      { return "Gather" }
func (gatherKernel) hashAttrs() string   { return "" }
func (gatherKernel) arity() int          { return 2 }
func (gatherKernel) diffWRT() []bool     { return []bool{true, false} }
func (gatherKernel) floatInputs() []bool { return []bool{true, false} }
func (gatherKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return tensor.Shape{in[1].TotalSize(), in[0][1]}, nil
}

func (gatherKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	ids := in[1].Ints()
	rows, cols := in[0].Shape()[0], in[0].Shape()[1]
	for i, id := range ids {
		if id < 0 || id >= rows {
			return fmt.Errorf("id %d at position %d is outside the table's %d rows", id, i, rows)
		}
	}
	switch in[0].Dtype() {
	case Float32:
		t := in[0].Float32s()
		gather(t, ids, cols, out.Float32s())
	case Float64:
		t := in[0].Float64s()
		gather(t, ids, cols, out.Float64s())
	}
	return nil
}

func gather[T float](table []T, ids []int, cols int, out []T) {
	for i, id := range ids {
		copy(out[i*cols:(i+1)*cols], table[id*cols:(id+1)*cols])
	}
}

// gradReads: the table's gradient scatters by the ids.
func (gatherKernel) gradReads(int) []bool { return reads(2, 1) }

func (gatherKernel) backward(_ int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	ids := in[1].Ints()
	cols := in[0].Shape()[1]
	dst.Zero()
	switch dst.Dtype() {
	case Float32:
		d := dst.Float32s()
		scatterAdd(d, ids, cols, gout.Float32s())
	case Float64:
		d := dst.Float64s()
		scatterAdd(d, ids, cols, gout.Float64s())
	}
	return nil
}

func scatterAdd[T float](dst []T, ids []int, cols int, g []T) {
	for i, id := range ids {
		row := dst[id*cols : (id+1)*cols]
		for j, v := range g[i*cols : (i+1)*cols] {
			row[j] += v
		}
	}
}

// AddBias returns x + b with b [d] added to every row of x [..., d], without
// materialising a broadcast copy of b.
func (g *Graph) AddBias(x, b *Node) *Node {
	if !g.ok("AddBias", x, b) {
		return nil
	}
	xs, bs := x.n.Shape(), b.n.Shape()
	if bs.Dims() != 1 || xs.Dims() < 1 || xs[xs.Dims()-1] != bs[0] {
		return g.failf("AddBias: bias %v does not match the last axis of %v", bs, xs)
	}
	return g.applyFused(biasKernel{}, x, b)
}

type biasKernel struct{}

func (biasKernel) opName() string                                   { return "AddBias" }
func (biasKernel) hashAttrs() string                                { return "" }
func (biasKernel) arity() int                                       { return 2 }
func (biasKernel) diffWRT() []bool                                  { return []bool{true, true} }
func (biasKernel) floatInputs() []bool                              { return []bool{true, true} }
func (biasKernel) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }

func (biasKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		addBias(x, in[1].Float32s(), out.Float32s())
	case Float64:
		x := in[0].Float64s()
		addBias(x, in[1].Float64s(), out.Float64s())
	}
	return nil
}

func addBias[T float](x, b, out []T) {
	d := len(b)
	for r := 0; r < len(x); r += d {
		xr, or := x[r:r+d], out[r:r+d]
		for j, bj := range b {
			or[j] = xr[j] + bj
		}
	}
}

// gradReads: both gradients are the upstream gradient or its column sums.
func (biasKernel) gradReads(int) []bool { return reads(2) }

func (biasKernel) backward(wrt int, _ []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	if wrt == 0 {
		return tensor.Copy(dst, gout)
	}
	switch dst.Dtype() {
	case Float32:
		d := dst.Float32s()
		sumRows(gout.Float32s(), d, false)
	case Float64:
		d := dst.Float64s()
		sumRows(gout.Float64s(), d, false)
	}
	return nil
}

// sumRows sets dst to the sum of g's rows (len(dst) columns), or adds the sum into dst
// with accumulate, row by row in order.
func sumRows[T float](g, dst []T, accumulate bool) {
	d := len(dst)
	if !accumulate {
		clear(dst)
	}
	if g32, ok := any(g).([]float32); ok {
		// The same sums in the same order, eight columns at a time.
		dst32 := any(dst).([]float32)
		for r := 0; r < len(g32); r += d {
			vmath.Add(dst32, g32[r:r+d])
		}
		return
	}
	for r := 0; r < len(g); r += d {
		for j, v := range g[r : r+d] {
			dst[j] += v
		}
	}
}

// Softplus returns log(1 + exp(x)) elementwise, computed stably for large |x|.
func (g *Graph) Softplus(x *Node) *Node {
	if !g.ok("Softplus", x) {
		return nil
	}
	return g.applyFused(softplusKernel{}, x)
}

type softplusKernel struct{}

func (softplusKernel) opName() string                                   { return "Softplus" }
func (softplusKernel) hashAttrs() string                                { return "" }
func (softplusKernel) arity() int                                       { return 1 }
func (softplusKernel) diffWRT() []bool                                  { return []bool{true} }
func (softplusKernel) floatInputs() []bool                              { return []bool{true} }
func (softplusKernel) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }

func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func (softplusKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		mapInto(x, out.Float32s(), softplus)
	case Float64:
		x := in[0].Float64s()
		mapInto(x, out.Float64s(), softplus)
	}
	return nil
}

func mapInto[T float](x, out []T, f func(float64) float64) {
	for i, v := range x {
		out[i] = T(f(float64(v)))
	}
}

func (softplusKernel) backward(_ int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		mulMap(x, gout.Float32s(), dst.Float32s(), sigmoid)
	case Float64:
		x := in[0].Float64s()
		mulMap(x, gout.Float64s(), dst.Float64s(), sigmoid)
	}
	return nil
}

// mulMap sets dst[i] = g[i]·f(x[i]).
func mulMap[T float](x, g, dst []T, f func(float64) float64) {
	for i, v := range x {
		dst[i] = g[i] * T(f(float64(v)))
	}
}

// reshapeKernel copies its input into a new shape (a copying Reshape).
type reshapeKernel struct{ to tensor.Shape }

func (k reshapeKernel) opName() string                                { return "Reshape" }
func (k reshapeKernel) hashAttrs() string                             { return fmt.Sprint(k.to) }
func (reshapeKernel) arity() int                                      { return 1 }
func (reshapeKernel) diffWRT() []bool                                 { return []bool{true} }
func (reshapeKernel) floatInputs() []bool                             { return []bool{true} }
func (k reshapeKernel) outShape([]tensor.Shape) (tensor.Shape, error) { return k.to.Clone(), nil }

func (reshapeKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	copyData(out, in[0])
	return nil
}

// gradReads: the gradient is the upstream gradient, reshaped.
func (reshapeKernel) gradReads(int) []bool { return reads(1) }

func (reshapeKernel) backward(_ int, _ []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	copyData(dst, gout)
	return nil
}

// copyData copies the elements of src into dst (same size, any shapes, 0-d included).
func copyData(dst, src *tensor.Dense) {
	if dst.Dtype() == src.Dtype() {
		switch dst.Dtype() {
		case Float32:
			copy(dst.Float32s(), src.Float32s())
			return
		case Float64:
			copy(dst.Float64s(), src.Float64s())
			return
		}
	}
	for i := range dst.Shape().TotalSize() {
		v, _ := src.At(flatCoords(src.Shape(), i)...)
		_ = dst.SetAt(v, flatCoords(dst.Shape(), i)...)
	}
}

// flatCoords converts a flat row-major index into coordinates of shape.
func flatCoords(shape tensor.Shape, i int) []int {
	c := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		c[d] = i % shape[d]
		i /= shape[d]
	}
	return c
}
