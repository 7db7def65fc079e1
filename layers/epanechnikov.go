package layers

import (
	"math"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers/internal/compact"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(contentForm(Epanechnikov{}, "log K = log max(0, 1 − ‖q − k‖²/h²): compact support, exact zeros"))
}

// Epanechnikov is the compactly supported kernel,
// log K(q, k) = log max(0, 1 − ‖q − k‖² / h²); it is -Inf for ‖q − k‖ >= h.
type Epanechnikov struct{}

// Name returns "epanechnikov".
func (Epanechnikov) Name() string { return "epanechnikov" }

// MarshalText returns the spec.
func (k Epanechnikov) MarshalText() ([]byte, error) { return []byte(k.Name()), nil }

// UnmarshalText parses a spec of this kernel.
func (k *Epanechnikov) UnmarshalText(b []byte) error { return unmarshalTerm(b, k) }

// LogK returns log(1 − ‖q − k‖² / h²), or -Inf outside the support
// ‖q − k‖ < h. It panics if len(q) != len(k).
func (Epanechnikov) LogK(q, k []float64, h float64) float64 {
	u := scaledSqDist(q, k, h)
	if u >= 1 {
		return math.Inf(-1)
	}
	return math.Log1p(-u)
}

// Scores returns log max(0, 1 − ‖q − k‖² / h²): −Inf outside the support, where the
// gradient is exactly 0.
func (Epanechnikov) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "epanechnikov", q, k) {
		return nil
	}
	return g.LogPositive(g.AddConst(g.Neg(h.divide(g, g.PairwiseDist(q, k, true), 2)), 1))
}

// ONNXScores writes log max(0, 1 − ‖q − k‖² / h²) into g.
func (Epanechnikov) ONNXScores(g *onnx.Graph, q, k string, h ONNXWidth) string {
	return onnxLogPositive(g, g.AddConst(g.Unary("Neg", h.divide(g, onnxSqDist(g, q, k), 2)), 1))
}

// pairKernel returns the kernel's fast path (autodiff.PairKernel, see pairOf).
func (k Epanechnikov) pairKernel() autodiff.PairKernel { return epanechnikovPair(k) }

// epanechnikovPair is Epanechnikov's fast path: its scores and gradients from the pair terms, in
// float64 rows and float32 ones.
type epanechnikovPair Epanechnikov

// Name returns Epanechnikov's spec.
func (k epanechnikovPair) Name() string { return Epanechnikov(k).Name() }

// PairTerms reads the squared distance (autodiff.PairKernel, for the tiled local mean).
func (epanechnikovPair) PairTerms() (dot, dist bool) { return false, true }

// PairScores sets s = log(1 − ‖q − k‖² / h²), −Inf outside the support.
func (epanechnikovPair) PairScores(s, _, d2 []float64, h float64) {
	c := 1 / (h * h) // a product per pair is faster than a quotient
	for j, x := range d2 {
		u := x * c
		if u >= 1 {
			s[j] = math.Inf(-1)
			continue
		}
		s[j] = math.Log1p(-u)
	}
}

// PairValues sets k = max(0, 1 − ‖q − k‖² / h²) (autodiff.DirectPairKernel: the fused
// op weighs pairs without a log per pair).
func (epanechnikovPair) PairValues(k, _, d2 []float64, h float64) {
	c := 1 / (h * h)
	for j, x := range d2 {
		k[j] = max(1-x*c, 0)
	}
}

// PairGrads returns the gradients of log(1 − ‖q − k‖² / h²), zero outside the support.
func (epanechnikovPair) PairGrads(gs, _, d2 []float64, h float64, _, gd2 []float64) float64 {
	var gh float64
	for j, g := range gs {
		den := h*h - d2[j]
		if g == 0 || den <= 0 {
			continue
		}
		gd2[j] = -g / den
		gh += g * 2 * d2[j] / (h * den)
	}
	return gh
}

// PairScores32 sets s = log(1 − ‖q − k‖² / h²), −Inf outside the support, from the
// terms x (autodiff.PairKernel32; s may be x).
func (epanechnikovPair) PairScores32(s, x []float32, h float32) {
	s = s[:len(x)]
	c := 1 / (float64(h) * float64(h))
	for j, v := range x {
		u := float64(v) * c
		if u >= 1 {
			s[j] = float32(math.Inf(-1))
			continue
		}
		s[j] = float32(math.Log1p(-u))
	}
}

// PairValues32 sets k = max(0, 1 − ‖q − k‖² / h²) from the terms x
// (autodiff.DirectPairKernel32; k may be x).
func (epanechnikovPair) PairValues32(k, x []float32, h float32) {
	k = k[:len(x)]
	c := 1 / (h * h)
	for j, v := range x {
		k[j] = max(1-v*c, 0)
	}
}

// PairGrads32 is PairGrads in float32, in place: zero outside the support (the products
// summed in eight float32 lanes, package compact's loop).
func (epanechnikovPair) PairGrads32(g, x []float32, h float32) float64 {
	return 2 * float64(compact.EpanechnikovGrads(g, x, h*h)) / float64(h)
}
