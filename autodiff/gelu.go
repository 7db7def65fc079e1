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

// geluKernel computes GELU; in float32 it runs a float32 fast path, which for the tanh form
// caches 0.5(1 + tanh(·)) for the backward pass; the exact form's backward pass recomputes
// Φ(x) + x·φ(x) from x.
type geluKernel struct {
	approx GELUApprox
	s32    []float32 // float32 tanh form: 0.5(1 + tanh(u)) of the last forward pass (the exact form keeps nothing)
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
		if len(k.s32) != len(x) {
			k.s32 = make([]float32, len(x))
		}
		geluTanh32(x, k.s32, flat[float32](out))
	} else {
		parallelMap(flat[float64](in[0]), nil, flat[float64](out), f)
	}
	return nil
}

// gradReads: the gradient reads x (and the kernel's own cached factor), not the output.
func (k *geluKernel) gradReads(int) []bool { return reads(1, 0) }

func (k *geluKernel) backward(_ int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	_, df := k.funcs()
	if isF32(in[0]) {
		x := flat[float32](in[0])
		switch {
		case k.approx == GELUTanh && len(k.s32) == len(x):
			geluTanhGrad32(x, k.s32, flat[float32](gout), flat[float32](dst))
		case k.approx == GELUExact:
			geluExactGrad32(x, flat[float32](gout), flat[float32](dst))
		default:
			parallelMap(x, flat[float32](gout), flat[float32](dst), df)
		}
		return nil
	} else {
		parallelMap(flat[float64](in[0]), flat[float64](gout), flat[float64](dst), df)
	}
	return nil
}

// geluTanh32 sets y = 0.5·x·(1 + tanh(u)), u = √(2/π)(x + 0.044715x³), keeping
// s = 0.5·(1 + tanh(u)) for the backward pass. It computes s as the logistic function
// 1/(1 + exp(−2u)), which is the same number without the cancellation of 1 + tanh(u) for
// negative x, so float32 keeps full relative precision.
func geluTanh32(x, s, y []float32) {
	blocks(len(x), func(lo, hi int) { vmath.GELUTanh(x[lo:hi], s[lo:hi], y[lo:hi]) })
}

// geluTanhGrad32 sets dx = g·(s + 2·x·s·(1 − s)·√(2/π)(1 + 3·0.044715x²)), which is
// g·(0.5(1 + t) + 0.5·x·(1 − t²)·u′) with s = 0.5(1 + t).
func geluTanhGrad32(x, s, g, dx []float32) {
	const block = 2048
	blocks := (len(x) + block - 1) / block
	parallelFor(blocks, block*4, func(lo, hi int) {
		e := min(hi*block, len(x))
		xs, ss, gs, ds := x[lo*block:e], s[lo*block:e], g[lo*block:e], dx[lo*block:e]
		vmath.GELUGrad(xs, ss, gs, ds)
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
