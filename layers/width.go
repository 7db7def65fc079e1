package layers

import (
	"fmt"
	"math"

	"github.com/locusml/locus/autodiff"
)

// Width is a bandwidth h > 0 resolved for one forward pass. With Node nil it is the
// constant Value; otherwise Node holds either one bandwidth for every score (shape [] or
// [1]) or one per query row (shape [N, Tq] for scores [N, Tq, Tk]).
type Width struct {
	Value float64
	Node  *autodiff.Node
}

// Fixed returns the constant bandwidth h.
func Fixed(h float64) Width { return Width{Value: h} }

// divide returns x / h^pow, h broadcast over the rows of x [N, Tq, Tk].
func (w Width) divide(g *autodiff.Graph, x *autodiff.Node, pow int) *autodiff.Node {
	if g.Err() != nil {
		return nil
	}
	if w.Node == nil {
		if !(w.Value > 0) || math.IsInf(w.Value, 0) {
			return g.Fail(fmt.Errorf("bandwidth %g, want a positive finite value", w.Value))
		}
		return g.Scale(x, 1/math.Pow(w.Value, float64(pow)))
	}
	h := w.Node
	if pow == 2 {
		h = g.Square(h)
	}
	shape := h.Shape()
	n := 1
	for _, d := range shape {
		n *= d
	}
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	if n == 1 {
		if len(shape) == 0 {
			shape = []int{1}
			h = g.Reshape(h, shape)
		}
		return g.MulScalar(x, g.Div(g.ConstTensor(shape, ones), h))
	}
	xs := x.Shape()
	if len(xs) < 2 || len(shape) != len(xs)-1 {
		return g.Fail(fmt.Errorf("bandwidth %v does not match the rows of scores %v", shape, xs))
	}
	return g.ScaleRows(x, g.Div(g.ConstTensor(shape, ones), h))
}
