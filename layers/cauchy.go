package layers

import (
	"math"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(contentForm(Cauchy{}, "log K = −log(1 + ‖q − k‖² / h²): heavy tails"))
}

// Cauchy is the heavy-tailed kernel, log K(q, k) = -log(1 + ‖q − k‖² / h²).
type Cauchy struct{}

// Name returns "cauchy".
func (Cauchy) Name() string { return "cauchy" }

// MarshalText returns the spec.
func (k Cauchy) MarshalText() ([]byte, error) { return []byte(k.Name()), nil }

// UnmarshalText parses a spec of this kernel.
func (k *Cauchy) UnmarshalText(b []byte) error { return unmarshalTerm(b, k) }

// LogK returns -log(1 + ‖q − k‖² / h²). It panics if len(q) != len(k).
func (Cauchy) LogK(q, k []float64, h float64) float64 {
	return -math.Log1p(scaledSqDist(q, k, h))
}

// Scores returns −log(1 + ‖q − k‖² / h²).
func (Cauchy) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "cauchy", q, k) {
		return nil
	}
	return g.Neg(g.Log(g.AddConst(h.divide(g, g.PairwiseDist(q, k, true), 2), 1)))
}

// ONNXScores writes −log(1 + ‖q − k‖² / h²) into g.
func (Cauchy) ONNXScores(g *onnx.Graph, q, k string, h ONNXWidth) string {
	return g.Unary("Neg", g.Unary("Log", g.AddConst(h.divide(g, onnxSqDist(g, q, k), 2), 1)))
}

// pairKernel returns the kernel's fast path (autodiff.PairKernel, see pairOf).
func (k Cauchy) pairKernel() autodiff.PairKernel { return cauchyPair(k) }

// cauchyPair is Cauchy's fast path: its scores and gradients from the pair terms, in
// float64 rows and float32 ones.
type cauchyPair Cauchy

// Name returns Cauchy's spec.
func (k cauchyPair) Name() string { return Cauchy(k).Name() }

// PairTerms reads the squared distance (autodiff.PairKernel, for the tiled local mean).
func (cauchyPair) PairTerms() (dot, dist bool) { return false, true }

// PairScores sets s = −log(1 + ‖q − k‖² / h²).
func (cauchyPair) PairScores(s, _, d2 []float64, h float64) {
	c := 1 / (h * h) // a product per pair is faster than a quotient
	for j, x := range d2 {
		s[j] = -math.Log1p(x * c)
	}
}

// PairValues sets k = 1 / (1 + ‖q − k‖² / h²) (autodiff.DirectPairKernel: the fused op
// weighs pairs without a log per pair).
func (cauchyPair) PairValues(k, _, d2 []float64, h float64) {
	c := 1 / (h * h)
	for j, x := range d2 {
		k[j] = 1 / (1 + x*c)
	}
}

// PairGrads returns the gradients of −log(1 + ‖q − k‖² / h²).
func (cauchyPair) PairGrads(gs, _, d2 []float64, h float64, _, gd2 []float64) float64 {
	var gh float64
	for j, g := range gs {
		den := h*h + d2[j]
		gd2[j] = -g / den
		gh += g * 2 * d2[j] / (h * den)
	}
	return gh
}

// PairScores32 sets s = −log(1 + ‖q − k‖² / h²) from the terms x (autodiff.PairKernel32; s
// may be x).
func (cauchyPair) PairScores32(s, x []float32, h float32) {
	s = s[:len(x)]
	c := 1 / (float64(h) * float64(h))
	for j, v := range x {
		s[j] = float32(-math.Log1p(float64(v) * c))
	}
}

// PairValues32 sets k = 1 / (1 + ‖q − k‖² / h²) from the terms x
// (autodiff.DirectPairKernel32; k may be x).
func (cauchyPair) PairValues32(k, x []float32, h float32) {
	autodiff.Recip1p32(k[:len(x)], x, 1/(h*h))
}

// PairGrads32 is PairGrads in float32, in place.
func (c cauchyPair) PairGrads32(g, x []float32, h float32) float64 {
	a, dlog := c.PairRatio32(h)
	return autodiff.RatioGrad32(g, x, a) * dlog
}

// PairRatio32 returns a = h² and a′/a = 2/h (autodiff.RationalPairKernel32: its values are
// 1/(1 + x/a), and KernelAttention's fused mixture loops form them beside a linear
// kernel's).
func (cauchyPair) PairRatio32(h float32) (a float32, dlog float64) { return h * h, 2 / float64(h) }
