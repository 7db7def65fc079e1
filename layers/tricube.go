package layers

import (
	"math"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers/internal/compact"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(contentForm(Tricube{}, "log K = 3·log(1 − (‖q − k‖/h)³): compact support, smooth edge (LOESS)"))
}

// Tricube is the compactly supported kernel of LOESS, K(q, k) = (1 − u³)³ for
// u = ‖q − k‖ / h: log K(q, k) = 3·log(1 − u³), which is -Inf for u >= 1. Unlike
// Epanechnikov's, its weight falls to 0 smoothly (K and its first two derivatives vanish
// at u = 1), and it is flatter near u = 0.
type Tricube struct{}

// Name returns "tricube".
func (Tricube) Name() string { return "tricube" }

// MarshalText returns the spec.
func (k Tricube) MarshalText() ([]byte, error) { return []byte(k.Name()), nil }

// UnmarshalText parses a spec of this kernel.
func (k *Tricube) UnmarshalText(b []byte) error { return unmarshalTerm(b, k) }

// LogK returns 3·log(1 − u³) for u = ‖q − k‖ / h, or -Inf outside the support u < 1.
// It panics if len(q) != len(k).
func (Tricube) LogK(q, k []float64, h float64) float64 {
	u := scaledDist(q, k, h)
	if u >= 1 {
		return math.Inf(-1)
	}
	return 3 * math.Log1p(-u*u*u)
}

// Scores returns 3·log max(0, 1 − (‖q − k‖ / h)³): −Inf outside the support, where the
// gradient is exactly 0, as it is at q = k.
func (Tricube) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "tricube", q, k) {
		return nil
	}
	u := h.divide(g, g.PairwiseDist(q, k, false), 1)
	cube := g.Mul(g.Mul(u, u), u)
	return g.Scale(g.LogPositive(g.AddConst(g.Neg(cube), 1)), 3)
}

// ONNXScores writes 3·log max(0, 1 − (‖q − k‖ / h)³) into g.
func (Tricube) ONNXScores(g *onnx.Graph, q, k string, h ONNXWidth) string {
	u := h.divide(g, onnxDist(g, q, k), 1)
	cube := g.Mul(g.Mul(u, u), u)
	return g.Scale(onnxLogPositive(g, g.AddConst(g.Unary("Neg", cube), 1)), 3)
}

// pairKernel returns the kernel's fast path (autodiff.PairKernel, see pairOf).
func (k Tricube) pairKernel() autodiff.PairKernel { return tricubePair(k) }

// tricubePair is Tricube's fast path: its scores and gradients from the pair terms, in
// float64 rows and float32 ones.
type tricubePair Tricube

// Name returns Tricube's spec.
func (k tricubePair) Name() string { return Tricube(k).Name() }

// PairTerms reads the squared distance (autodiff.PairKernel, for the tiled local mean).
func (tricubePair) PairTerms() (dot, dist bool) { return false, true }

// PairScores sets s = 3·log(1 − (‖q − k‖ / h)³), −Inf outside the support.
func (tricubePair) PairScores(s, _, d2 []float64, h float64) {
	c := 1 / h // a product per pair is faster than a quotient
	for j, x := range d2 {
		u := math.Sqrt(x) * c
		if u >= 1 {
			s[j] = math.Inf(-1)
			continue
		}
		s[j] = 3 * math.Log1p(-u*u*u)
	}
}

// PairValues sets k = (1 − (‖q − k‖ / h)³)³, 0 outside the support
// (autodiff.DirectPairKernel: the fused op weighs pairs without a log per pair).
func (tricubePair) PairValues(k, _, d2 []float64, h float64) {
	c := 1 / h
	for j, x := range d2 {
		u := math.Sqrt(x) * c
		if u >= 1 {
			k[j] = 0
			continue
		}
		v := 1 - u*u*u
		k[j] = v * v * v
	}
}

// PairGrads returns the gradients of 3·log(1 − u³), u = ‖q − k‖ / h: zero outside the
// support and at q = k.
func (tricubePair) PairGrads(gs, _, d2 []float64, h float64, _, gd2 []float64) float64 {
	var gh float64
	ih := 1 / h // one quotient per pair instead of three
	c := -4.5 * ih * ih * ih
	for j, g := range gs {
		if g == 0 {
			continue
		}
		r := math.Sqrt(d2[j])
		u := r * ih
		if u >= 1 {
			continue
		}
		u3 := u * u * u
		f := g / (1 - u3)
		gd2[j] = c * f * r
		gh += 9 * f * u3
	}
	return gh * ih
}

// PairDistance32 marks the float32 rows as reading the distance ‖q − k‖
// (autodiff.DistancePairKernel32).
func (tricubePair) PairDistance32() {}

// PairScores32 sets s = 3·log(1 − (r / h)³), −Inf outside the support, from the
// distances r (autodiff.PairKernel32; s may be r).
func (tricubePair) PairScores32(s, r []float32, h float32) {
	s = s[:len(r)]
	c := 1 / float64(h)
	for j, v := range r {
		u := float64(v) * c
		if u >= 1 {
			s[j] = float32(math.Inf(-1))
			continue
		}
		s[j] = float32(3 * math.Log1p(-u*u*u))
	}
}

// PairValues32 sets k = (1 − (r / h)³)³, 0 outside the support, from the distances r
// (autodiff.DirectPairKernel32; k may be r).
func (tricubePair) PairValues32(k, r []float32, h float32) { compact.TricubeValues(k, r, 1/h) }

// PairGrads32 sets g = g·∂s/∂r = −9g·u² / (h(1 − u³)), u = r / h, and returns
// Σ g·∂s/∂h = Σ 9g·u³ / (h(1 − u³)): zero outside the support (the products summed in
// eight float32 lanes, package compact's loops).
func (tricubePair) PairGrads32(g, r []float32, h float32) float64 {
	ih := 1 / h
	return float64(compact.TricubeGrads(g, r, ih)) * float64(ih)
}
