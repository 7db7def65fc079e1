package autodiff

import (
	"fmt"

	"gorgonia.org/tensor"
)

// CausalLinearAttention returns out [N, Tq, d], out_t = Σ_{s ≤ t+offset} (a_t·b_s) v_s, for
// a [N, Tq, m], b [N, Tk, m] and v [N, Tk, d]: the causal numerator of linear
// (random-feature) attention, computed with running prefix sums S_t = Σ_{s ≤ t+offset}
// b_s v_sᵀ in O(N·(Tq+Tk)·m·d) time and O(m·d) extra memory (the T×T weights are never
// formed). The backward pass runs the same sweep (for a) and a reverse sweep of the
// suffix sums Σ_{t ≥ s−offset} a_t g_tᵀ (for b and v).
func (g *Graph) CausalLinearAttention(a, b, v *Node, offset int) *Node {
	if !g.ok("CausalLinearAttention", a, b, v) {
		return nil
	}
	return g.applyFused(causalLinearKernel{offset: offset}, a, b, v)
}

type causalLinearKernel struct{ offset int }

func (causalLinearKernel) opName() string      { return "CausalLinearAttention" }
func (k causalLinearKernel) hashAttrs() string { return fmt.Sprintf("offset=%d", k.offset) }
func (causalLinearKernel) arity() int          { return 3 }
func (causalLinearKernel) diffWRT() []bool     { return []bool{true, true, true} }
func (causalLinearKernel) floatInputs() []bool { return []bool{true, true, true} }
func (k causalLinearKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	a, b, v := in[0], in[1], in[2]
	if a.Dims() != 3 || b.Dims() != 3 || v.Dims() != 3 || a[0] != b[0] || b[0] != v[0] || a[2] != b[2] || b[1] != v[1] {
		return nil, fmt.Errorf("a %v, b %v and v %v, want [N, Tq, m], [N, Tk, m] and [N, Tk, d]", a, b, v)
	}
	if k.offset < 0 {
		return nil, fmt.Errorf("negative offset %d", k.offset)
	}
	return tensor.Shape{a[0], a[1], v[2]}, nil
}

func (k causalLinearKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	switch in[0].Dtype() {
	case Float32:
		causalLinearFwd(in[0].Float32s(), in[1].Float32s(), in[2].Float32s(), nil, out.Float32s(), in[0].Shape(), in[2].Shape(), k.offset)
	case Float64:
		causalLinearFwd(in[0].Float64s(), in[1].Float64s(), in[2].Float64s(), nil, out.Float64s(), in[0].Shape(), in[2].Shape(), k.offset)
	}
	return nil
}

func (k causalLinearKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	switch in[0].Dtype() {
	case Float32:
		causalLinearBwd(wrt, in[0].Float32s(), in[1].Float32s(), in[2].Float32s(), gout.Float32s(), dst.Float32s(), in[0].Shape(), in[2].Shape(), k.offset)
	case Float64:
		causalLinearBwd(wrt, in[0].Float64s(), in[1].Float64s(), in[2].Float64s(), gout.Float64s(), dst.Float64s(), in[0].Shape(), in[2].Shape(), k.offset)
	}
	return nil
}

// causalLinearFwd writes out (or, with gout not nil, the gradient of a into out: row t
// is S_t g_t) by the forward sweep of the prefix sums.
func causalLinearFwd[T float](a, b, v, gout, out []T, as, vs tensor.Shape, offset int) {
	n, tq, m, tk, d := as[0], as[1], as[2], vs[1], vs[2]
	parallelFor(n, (tq+tk)*m*d, func(lo, hi int) { causalLinearFwdRows(a, b, v, gout, out, tq, m, tk, d, offset, lo, hi) })
}

func causalLinearFwdRows[T float](a, b, v, gout, out []T, tq, m, tk, d, offset, lo, hi int) {
	s, acc := make([]float64, m*d), make([]float64, d)
	for i := lo; i < hi; i++ {
		clear(s)
		next := 0
		for t := range tq {
			for ; next < tk && next <= t+offset; next++ {
				br, vr := b[(i*tk+next)*m:][:m], v[(i*tk+next)*d:][:d]
				for p, bp := range br {
					row := s[p*d:][:d]
					for c, vc := range vr {
						row[c] += float64(bp) * float64(vc)
					}
				}
			}
			if gout == nil {
				ar, or := a[(i*tq+t)*m:][:m], out[(i*tq+t)*d:][:d]
				clear(acc)
				for p, ap := range ar {
					row := s[p*d:][:d]
					for c := range acc {
						acc[c] += float64(ap) * row[c]
					}
				}
				for c := range or {
					or[c] = T(acc[c])
				}
			} else {
				gr, or := gout[(i*tq+t)*d:][:d], out[(i*tq+t)*m:][:m]
				for p := range or {
					row := s[p*d:][:d]
					var x float64
					for c, gc := range gr {
						x += row[c] * float64(gc)
					}
					or[p] = T(x)
				}
			}
		}
	}
}

// causalLinearBwd writes the gradient of input wrt (0: a, 1: b, 2: v) into dst.
func causalLinearBwd[T float](wrt int, a, b, v, gout, dst []T, as, vs tensor.Shape, offset int) {
	if wrt == 0 {
		causalLinearFwd(a, b, v, gout, dst, as, vs, offset)
		return
	}
	n, tq, m, tk, d := as[0], as[1], as[2], vs[1], vs[2]
	parallelFor(n, (tq+tk)*m*d, func(lo, hi int) { causalLinearBwdRows(wrt, a, b, v, gout, dst, tq, m, tk, d, offset, lo, hi) })
}

func causalLinearBwdRows[T float](wrt int, a, b, v, gout, dst []T, tq, m, tk, d, offset, lo, hi int) {
	r, acc := make([]float64, m*d), make([]float64, d) // R_s = Σ_{t ≥ s−offset} a_t g_tᵀ
	for i := lo; i < hi; i++ {
		clear(r)
		t := tq - 1
		for s := tk - 1; s >= 0; s-- {
			for ; t >= 0 && t >= s-offset; t-- {
				ar, gr := a[(i*tq+t)*m:][:m], gout[(i*tq+t)*d:][:d]
				for p, ap := range ar {
					row := r[p*d:][:d]
					for c, gc := range gr {
						row[c] += float64(ap) * float64(gc)
					}
				}
			}
			br, vr := b[(i*tk+s)*m:][:m], v[(i*tk+s)*d:][:d]
			if wrt == 1 {
				dr := dst[(i*tk+s)*m:][:m]
				for p := range dr {
					row := r[p*d:][:d]
					var x float64
					for c, vc := range vr {
						x += row[c] * float64(vc)
					}
					dr[p] = T(x)
				}
			} else {
				dr := dst[(i*tk+s)*d:][:d]
				clear(acc)
				for p, bp := range br {
					row := r[p*d:][:d]
					for c := range acc {
						acc[c] += float64(bp) * row[c]
					}
				}
				for c := range dr {
					dr[c] = T(acc[c])
				}
			}
		}
	}
}
