package autodiff

import (
	"fmt"
	"github.com/locusml/locus/autodiff/internal/vmath"
	"math"

	"gorgonia.org/tensor"
)

// GELUApprox selects how GELU is computed.
type GELUApprox int

const (
	// GELUExact is 0.5·x·(1 + erf(x/√2)), PyTorch's approximate='none'.
	GELUExact GELUApprox = iota
	// GELUTanh is 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), PyTorch's
	// approximate='tanh'.
	GELUTanh
)

// String returns "exact" or "tanh".
func (a GELUApprox) String() string {
	switch a {
	case GELUExact:
		return "exact"
	case GELUTanh:
		return "tanh"
	}
	return fmt.Sprintf("GELUApprox(%d)", int(a))
}

// GELU applies the Gaussian error linear unit elementwise, exactly or with the tanh
// approximation.
func (g *Graph) GELU(x *Node, approx GELUApprox) *Node {
	if !g.ok("GELU", x) {
		return nil
	}
	if approx != GELUExact && approx != GELUTanh {
		return g.failf("GELU: unknown approximation %v", approx)
	}
	return g.applyFused(&geluKernel{approx: approx}, x)
}

// geluKernel computes GELU; in float32 it runs a float32 fast path that keeps nothing
// between the passes: the tanh form's backward pass recovers s = 0.5(1 + tanh(·)) from
// the output as y/x (vmath.GELUGradOut), the exact form's recomputes Φ(x) + x·φ(x) from x.
// (Keeping s cost B·T·d_ff floats a layer from the forward pass to the backward: 151 MB
// of the baby GPT's step.)
type geluKernel struct {
	approx GELUApprox
}

func (k *geluKernel) opName() string                                   { return "GELU" }
func (k *geluKernel) hashAttrs() string                                { return "{" + k.approx.String() + "}" }
func (k *geluKernel) arity() int                                       { return 1 }
func (k *geluKernel) diffWRT() []bool                                  { return []bool{true} }
func (k *geluKernel) floatInputs() []bool                              { return []bool{true} }
func (k *geluKernel) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }

const (
	sqrt2OverPi   = 0.7978845608028654 // √(2/π)
	invSqrt2      = 0.7071067811865476 // 1/√2
	invSqrt2Pi    = 0.3989422804014327 // 1/√(2π)
	geluTanhCubic = 0.044715
)

func geluExact(x float64) float64 { return 0.5 * x * (1 + math.Erf(x*invSqrt2)) }

// geluExactGrad is Φ(x) + x·φ(x).
func geluExactGrad(x float64) float64 {
	return 0.5*(1+math.Erf(x*invSqrt2)) + x*invSqrt2Pi*math.Exp(-0.5*x*x)
}

func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(sqrt2OverPi*(x+geluTanhCubic*x*x*x)))
}

func geluTanhGrad(x float64) float64 {
	t := math.Tanh(sqrt2OverPi * (x + geluTanhCubic*x*x*x))
	return 0.5*(1+t) + 0.5*x*(1-t*t)*sqrt2OverPi*(1+3*geluTanhCubic*x*x)
}

func (k *geluKernel) funcs() (f, df func(float64) float64) {
	if k.approx == GELUTanh {
		return geluTanh, geluTanhGrad
	}
	return geluExact, geluExactGrad
}

func (k *geluKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	f, _ := k.funcs()
	if isF32(in[0]) {
		x := flat[float32](in[0])
		if k.approx == GELUExact {
			geluExact32(x, flat[float32](out))
			return nil
		}
		geluTanh32(x, flat[float32](out))
	} else {
		parallelMap(flat[float64](in[0]), nil, flat[float64](out), f)
	}
	return nil
}

// gradReads: the gradient reads x and, for the tanh form, the output.
func (k *geluKernel) gradReads(int) []bool {
	if k.approx == GELUTanh {
		return reads(1, 0, 1)
	}
	return reads(1, 0)
}

func (k *geluKernel) backward(_ int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	_, df := k.funcs()
	if isF32(in[0]) {
		x := flat[float32](in[0])
		if k.approx == GELUTanh {
			geluTanhGrad32(x, flat[float32](out), flat[float32](gout), flat[float32](dst))
		} else {
			geluExactGrad32(x, flat[float32](gout), flat[float32](dst))
		}
		return nil
	} else {
		parallelMap(flat[float64](in[0]), flat[float64](gout), flat[float64](dst), df)
	}
	return nil
}

// geluBlock is the number of elements whose s = 0.5·(1 + tanh(u)) geluTanh32 keeps on
// the stack at once.
const geluBlock = 2048

// geluTanh32 sets y = x·s, s = 0.5·(1 + tanh(u)), u = √(2/π)(x + 0.044715x³). It computes
// s as the logistic function 1/(1 + exp(−2u)), which is the same number without the
// cancellation of 1 + tanh(u) for negative x, so float32 keeps full relative precision.
func geluTanh32(x, y []float32) {
	nb := (len(x) + geluBlock - 1) / geluBlock
	parallelFor(nb, geluBlock*4, func(lo, hi int) {
		var s [geluBlock]float32
		for b := lo; b < hi; b++ {
			i, e := b*geluBlock, min((b+1)*geluBlock, len(x))
			vmath.GELUTanh(x[i:e], s[:e-i], y[i:e])
		}
	})
}

// geluTanhGrad32 sets dx = g·(s + 2·x·s·(1 − s)·√(2/π)(1 + 3·0.044715x²)), which is
// g·(0.5(1 + t) + 0.5·x·(1 − t²)·u′) with s = 0.5(1 + t), recovering s from the output
// y = x·s (vmath.GELUGradOut).
func geluTanhGrad32(x, y, g, dx []float32) {
	const block = 2048
	blocks := (len(x) + block - 1) / block
	parallelFor(blocks, block*4, func(lo, hi int) {
		e := min(hi*block, len(x))
		vmath.GELUGradOut(x[lo*block:e], y[lo*block:e], g[lo*block:e], dx[lo*block:e])
	})
}

// geluExact32 sets y = x·Φ(x) by vmath.GELUExact (an erfc fit in float32, vectorised)
// over blocks; the backward pass recomputes what it needs from x, so that the forward
// pass keeps nothing (B·T·d_ff floats a layer). Against Φ in float64 the result is within
// 5e-7 + 6e-8·x² relative: about 4 float32 ulps near 0, the second term the float32
// rounding of the exponent (TestGELUExactFloat32).
func geluExact32(x, y []float32) {
	blocks(len(x), func(lo, hi int) { vmath.GELUExact(x[lo:hi], y[lo:hi]) })
}

// geluExactGrad32 sets dx = g·(Φ(x) + x·φ(x)), by vmath.GELUExactGrad.
func geluExactGrad32(x, g, dx []float32) {
	blocks(len(x), func(lo, hi int) { vmath.GELUExactGrad(x[lo:hi], g[lo:hi], dx[lo:hi]) })
}

// parallelMap sets dst[i] = f(x[i]), or g[i]·f(x[i]) when g is not nil, in float64.
func parallelMap[T float](x, g, dst []T, f func(float64) float64) {
	const block = 1024
	blocks := (len(x) + block - 1) / block
	parallelFor(blocks, block*16, func(lo, hi int) {
		for i := lo * block; i < min(hi*block, len(x)); i++ {
			v := f(float64(x[i]))
			if g != nil {
				v *= float64(g[i])
			}
			dst[i] = T(v)
		}
	})
}
