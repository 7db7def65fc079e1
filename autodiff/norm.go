package autodiff

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/vmath"
)

// LayerNorm normalises x over its last axis with PyTorch's nn.LayerNorm semantics:
// y = (x − mean) / sqrt(var + eps) · weight + bias, where var is the biased variance.
// weight and bias have shape [d], d being the last dimension of x; bias may be nil (no
// bias). eps must be positive; 1e-5 is typical. A row of constant values (including
// d = 1) normalises to 0, never NaN.
func (g *Graph) LayerNorm(x, weight, bias *Node, eps float64) *Node {
	const name = "LayerNorm"
	inputs := []*Node{x, weight}
	if bias != nil {
		inputs = append(inputs, bias)
	}
	if !g.ok(name, inputs...) || !g.normArgs(name, x, eps) || !g.affineArg(name, "weight", x, weight) {
		return nil
	}
	if bias != nil && !g.affineArg(name, "bias", x, bias) {
		return nil
	}
	return g.applyFused(&layerNormKernel{eps: eps, bias: bias != nil}, inputs...)
}

// RMSNorm normalises x over its last axis by its root mean square:
// y = x / sqrt(mean(x²) + eps) · weight, with weight of shape [d], d being the last
// dimension of x. eps must be positive.
func (g *Graph) RMSNorm(x, weight *Node, eps float64) *Node {
	const name = "RMSNorm"
	if !g.ok(name, x, weight) || !g.normArgs(name, x, eps) || !g.affineArg(name, "weight", x, weight) {
		return nil
	}
	return g.applyFused(&rmsNormKernel{eps: eps}, x, weight)
}

func (g *Graph) normArgs(name string, x *Node, eps float64) bool {
	if x.Dims() < 1 {
		g.failf("%s: x needs at least one axis, got a scalar", name)
		return false
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		g.failf("%s: eps = %g, want a positive finite value", name, eps)
		return false
	}
	return true
}

// affineArg checks that p (weight or bias) has shape [d] for x [..., d].
func (g *Graph) affineArg(name, what string, x, p *Node) bool {
	xs, ps := x.n.Shape(), p.n.Shape()
	if ps.Dims() != 1 || ps[0] != xs[xs.Dims()-1] {
		g.failf("%s: %s %v does not match the last axis of x %v", name, what, ps, xs)
		return false
	}
	return true
}

// grow returns s resized to n, reallocating only when its capacity is too small.
func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// flat returns the backing slice of a float tensor of element type T (a 0-d tensor gives
// a slice of length 1).
func flat[T float](d *tensor.Dense) []T {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(d.Float32s()).([]T)
	}
	return any(d.Float64s()).([]T)
}

func isF32(d *tensor.Dense) bool { return d.Dtype() == Float32 }

// reduceCols sets dst[j] = Σ_r terms of column j, where row(r, lo, a) adds row r's terms
// for columns [lo, lo+len(a)) into a. acc is float64 scratch of length cols; the work is
// split over columns so that no two goroutines share an accumulator.
func reduceCols[T float](rows, cols int, acc []float64, dst []T, row func(r, lo int, a []float64)) {
	parallelFor(cols, rows*2, func(lo, hi int) {
		a := acc[lo:hi]
		clear(a)
		for r := 0; r < rows; r++ {
			row(r, lo, a)
		}
		for j, v := range a {
			dst[lo+j] = T(v)
		}
	})
}

// layerNormKernel implements Graph.LayerNorm. Inputs: x, weight[, bias]. Forward caches
// each row's mean and reciprocal standard deviation for backward. The weight and bias
// gradients are computed together in one pass over x and the output gradient, by
// whichever of the two backward calls comes first; the other takes its cached sums.
type layerNormKernel struct {
	eps          float64
	bias         bool
	mean, rstd   []float64 // per row, written by forward
	accW, accB   []float64 // per column sums of the weight and bias gradients
	haveW, haveB bool      // accW, accB hold this pass's sums, not yet handed out
}

func (k *layerNormKernel) opName() string { return "LayerNorm" }
func (k *layerNormKernel) hashAttrs() string {
	return fmt.Sprintf("{eps=%g,bias=%v}", k.eps, k.bias)
}
func (k *layerNormKernel) arity() int {
	if k.bias {
		return 3
	}
	return 2
}
func (k *layerNormKernel) diffWRT() []bool     { return []bool{true, true, true}[:k.arity()] }
func (k *layerNormKernel) floatInputs() []bool { return []bool{true, true, true}[:k.arity()] }
func (k *layerNormKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return in[0].Clone(), nil
}

func (k *layerNormKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	rows, cols := lastAxis(in[0].Shape())
	k.mean, k.rstd = grow(k.mean, rows), grow(k.rstd, rows)
	k.haveW, k.haveB = false, false
	if isF32(in[0]) {
		layerNormForward32(k, in, out, rows, cols)
	} else {
		layerNormForward[float64](k, in, out, rows, cols)
	}
	return nil
}

func layerNormForward[T float](k *layerNormKernel, in []*tensor.Dense, out *tensor.Dense, rows, cols int) {
	x, w, y := flat[T](in[0]), flat[T](in[1]), flat[T](out)
	var b []T
	if k.bias {
		b = flat[T](in[2])
	}
	n := float64(cols)
	parallelFor(rows, cols*6, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
			mu := rowSum(xr) / n
			rstd := 1 / math.Sqrt(rowSqDev(xr, mu)/n+k.eps)
			k.mean[r], k.rstd[r] = mu, rstd
			yr = yr[:len(xr)]
			if b == nil {
				for j, v := range xr {
					yr[j] = T((float64(v) - mu) * rstd * float64(w[j]))
				}
				continue
			}
			for j, v := range xr {
				yr[j] = T((float64(v)-mu)*rstd*float64(w[j]) + float64(b[j]))
			}
		}
	})
}

// layerNormForward32 is layerNormForward on the vector row kernels: float64 arithmetic
// as there, the row sums in vmath's fixed order of sixteen partial sums.
func layerNormForward32(k *layerNormKernel, in []*tensor.Dense, out *tensor.Dense, rows, cols int) {
	x, w, y := in[0].Float32s(), in[1].Float32s(), out.Float32s()
	var b []float32
	if k.bias {
		b = in[2].Float32s()
	}
	parallelFor(rows, cols*2, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			k.mean[r], k.rstd[r] = vmath.LayerNormRow(x[r*cols:(r+1)*cols], w, b, y[r*cols:(r+1)*cols], k.eps)
		}
	})
}

// rowSum returns Σ x in float64, in four interleaved partial sums (the additions of one
// sum wait for each other; four sums keep the adder busy).
func rowSum[T float](x []T) float64 {
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= len(x); j += 4 {
		q := x[j : j+4 : j+4]
		s0 += float64(q[0])
		s1 += float64(q[1])
		s2 += float64(q[2])
		s3 += float64(q[3])
	}
	for ; j < len(x); j++ {
		s0 += float64(x[j])
	}
	return (s0 + s1) + (s2 + s3)
}

// rowSqDev returns Σ (x − mu)², as rowSum.
func rowSqDev[T float](x []T, mu float64) float64 {
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= len(x); j += 4 {
		q := x[j : j+4 : j+4]
		d0, d1, d2, d3 := float64(q[0])-mu, float64(q[1])-mu, float64(q[2])-mu, float64(q[3])-mu
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; j < len(x); j++ {
		d := float64(x[j]) - mu
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// gradReads: the input's gradient reads x and the gain, the gain's and the bias's read
// x (the statistics are the kernel's own); the output is never read.
func (k *layerNormKernel) gradReads(wrt int) []bool {
	if wrt == 0 {
		return reads(k.arity(), 0, 1)
	}
	return reads(k.arity(), 0)
}

func (k *layerNormKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	rows, cols := lastAxis(in[0].Shape())
	if len(k.mean) != rows {
		return fmt.Errorf("backward ran before forward")
	}
	f32 := isF32(in[0])
	if wrt == 0 {
		if f32 {
			layerNormInputGrad32(k, in, gout, dst, rows, cols)
		} else {
			layerNormInputGrad[float64](k, in, gout, dst, rows, cols)
		}
		return nil
	}
	have := &k.haveW
	if wrt == 2 {
		have = &k.haveB
	}
	if !*have {
		k.accW = grow(k.accW, cols)
		if k.bias {
			k.accB = grow(k.accB, cols)
		}
		if f32 {
			layerNormParamGrads32(k, in[0].Float32s(), gout.Float32s(), rows, cols)
		} else {
			layerNormParamGrads(k, in[0].Float64s(), gout.Float64s(), rows, cols)
		}
		k.haveW, k.haveB = true, k.bias
	}
	*have = false
	acc := k.accW
	if wrt == 2 {
		acc = k.accB
	}
	if f32 {
		copyConv(dst.Float32s(), acc)
	} else {
		copy(dst.Float64s(), acc)
	}
	return nil
}

// copyConv sets dst[i] = float32(src[i]).
func copyConv(dst []float32, src []float64) {
	for i, v := range src[:len(dst)] {
		dst[i] = float32(v)
	}
}

// layerNormInputGrad: with ĥ = (x − μ)·rstd and dĥ = g ⊙ w,
// dx = rstd · (dĥ − mean(dĥ) − ĥ · mean(dĥ ⊙ ĥ)).
func layerNormInputGrad[T float](k *layerNormKernel, in []*tensor.Dense, gout, dst *tensor.Dense, rows, cols int) {
	x, w, g, d := flat[T](in[0]), flat[T](in[1]), flat[T](gout), flat[T](dst)
	n := float64(cols)
	parallelFor(rows, cols*8, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, gr, dr := x[r*cols:(r+1)*cols], g[r*cols:(r+1)*cols], d[r*cols:(r+1)*cols]
			mu, rstd := k.mean[r], k.rstd[r]
			var s1, s2 float64
			for j, v := range xr {
				dh := float64(gr[j]) * float64(w[j])
				s1 += dh
				s2 += dh * (float64(v) - mu) * rstd
			}
			s1, s2 = s1/n, s2/n
			for j, v := range xr {
				dh := float64(gr[j]) * float64(w[j])
				h := (float64(v) - mu) * rstd
				dr[j] = T(rstd * (dh - s1 - h*s2))
			}
		}
	})
}

// layerNormInputGrad32 is layerNormInputGrad on the vector row kernels (the row sums
// in vmath's fixed order).
func layerNormInputGrad32(k *layerNormKernel, in []*tensor.Dense, gout, dst *tensor.Dense, rows, cols int) {
	x, w, g, d := in[0].Float32s(), in[1].Float32s(), gout.Float32s(), dst.Float32s()
	parallelFor(rows, cols*3, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			vmath.LayerNormRowGrad(x[r*cols:(r+1)*cols], g[r*cols:(r+1)*cols], w, d[r*cols:(r+1)*cols], k.mean[r], k.rstd[r])
		}
	})
}

// layerNormParamGrads sets k.accW = Σ_rows g ⊙ ĥ and, with a bias, k.accB = Σ_rows g, in
// one pass; the work is split over columns, each column summed over the rows in order.
func layerNormParamGrads(k *layerNormKernel, x, g []float64, rows, cols int) {
	parallelFor(cols, rows*3, func(lo, hi int) {
		aw := k.accW[lo:hi]
		clear(aw)
		var ab []float64
		if k.bias {
			ab = k.accB[lo:hi]
			clear(ab)
		}
		for r := 0; r < rows; r++ {
			base := r*cols + lo
			mu, rstd := k.mean[r], k.rstd[r]
			for j := range aw {
				aw[j] += g[base+j] * (x[base+j] - mu) * rstd
			}
			for j := range ab {
				ab[j] += g[base+j]
			}
		}
	})
}

// layerNormParamGrads32 is layerNormParamGrads on the vector row kernel (the same sums in
// the same order).
func layerNormParamGrads32(k *layerNormKernel, x, g []float32, rows, cols int) {
	parallelFor(cols, rows*2, func(lo, hi int) {
		aw := k.accW[lo:hi]
		clear(aw)
		var ab []float64
		if k.bias {
			ab = k.accB[lo:hi]
			clear(ab)
		}
		for r := 0; r < rows; r++ {
			base := r*cols + lo
			vmath.NormParamGradAdd(x[base:], g[base:], k.mean[r], k.rstd[r], aw, ab)
		}
	})
}

// rmsNormKernel implements Graph.RMSNorm. Inputs: x, weight. Forward caches each row's
// reciprocal root mean square for backward.
type rmsNormKernel struct {
	eps  float64
	rstd []float64 // per row, written by forward
	acc  []float64 // per column scratch for the weight gradient
}

func (k *rmsNormKernel) opName() string      { return "RMSNorm" }
func (k *rmsNormKernel) hashAttrs() string   { return fmt.Sprintf("{eps=%g}", k.eps) }
func (k *rmsNormKernel) arity() int          { return 2 }
func (k *rmsNormKernel) diffWRT() []bool     { return []bool{true, true} }
func (k *rmsNormKernel) floatInputs() []bool { return []bool{true, true} }
func (k *rmsNormKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return in[0].Clone(), nil
}

func (k *rmsNormKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	rows, cols := lastAxis(in[0].Shape())
	k.rstd = grow(k.rstd, rows)
	if isF32(in[0]) {
		rmsNormForward[float32](k, in, out, rows, cols)
	} else {
		rmsNormForward[float64](k, in, out, rows, cols)
	}
	return nil
}

func rmsNormForward[T float](k *rmsNormKernel, in []*tensor.Dense, out *tensor.Dense, rows, cols int) {
	x, w, y := flat[T](in[0]), flat[T](in[1]), flat[T](out)
	parallelFor(rows, cols*4, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			rstd := 1 / math.Sqrt(ss/float64(cols)+k.eps)
			k.rstd[r] = rstd
			for j, v := range xr {
				yr[j] = T(float64(v) * rstd * float64(w[j]))
			}
		}
	})
}

// gradReads: both gradients read x and the gain, never the output.
func (k *rmsNormKernel) gradReads(int) []bool { return reads(2, 0, 1) }

func (k *rmsNormKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	rows, cols := lastAxis(in[0].Shape())
	if len(k.rstd) != rows {
		return fmt.Errorf("backward ran before forward")
	}
	if wrt > 0 {
		k.acc = grow(k.acc, cols)
	}
	if isF32(in[0]) {
		rmsNormBackward[float32](k, wrt, in, gout, dst, rows, cols)
	} else {
		rmsNormBackward[float64](k, wrt, in, gout, dst, rows, cols)
	}
	return nil
}

// rmsNormBackward: with ĥ = x·rstd and dĥ = g ⊙ w, dx = rstd · (dĥ − ĥ · mean(dĥ ⊙ ĥ)),
// dw = Σ_rows g ⊙ ĥ.
func rmsNormBackward[T float](k *rmsNormKernel, wrt int, in []*tensor.Dense, gout, dst *tensor.Dense, rows, cols int) {
	x, w, g, d := flat[T](in[0]), flat[T](in[1]), flat[T](gout), flat[T](dst)
	if wrt == 1 {
		reduceCols(rows, cols, k.acc, d, func(r, lo int, a []float64) {
			base := r*cols + lo
			rstd := k.rstd[r]
			for j := range a {
				a[j] += float64(g[base+j]) * float64(x[base+j]) * rstd
			}
		})
		return
	}
	n := float64(cols)
	parallelFor(rows, cols*6, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, gr, dr := x[r*cols:(r+1)*cols], g[r*cols:(r+1)*cols], d[r*cols:(r+1)*cols]
			rstd := k.rstd[r]
			var s float64
			for j, v := range xr {
				s += float64(gr[j]) * float64(w[j]) * float64(v) * rstd
			}
			s /= n
			for j, v := range xr {
				dr[j] = T(rstd * (float64(gr[j])*float64(w[j]) - float64(v)*rstd*s))
			}
		}
	})
}
