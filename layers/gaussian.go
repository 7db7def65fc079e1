package layers

import (
	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(contentForm(Gaussian{}, "log K = −‖q − k‖² / (2h²), the RBF kernel"))
}

// Gaussian is the RBF kernel, log K(q, k) = -‖q − k‖² / (2h²).
type Gaussian struct{}

// Name returns "gaussian".
func (Gaussian) Name() string { return "gaussian" }

// MarshalText returns the spec.
func (k Gaussian) MarshalText() ([]byte, error) { return []byte(k.Name()), nil }

// UnmarshalText parses a spec of this kernel.
func (k *Gaussian) UnmarshalText(b []byte) error { return unmarshalTerm(b, k) }

// LogK returns -‖q − k‖² / (2h²). It panics if len(q) != len(k).
func (Gaussian) LogK(q, k []float64, h float64) float64 {
	return -0.5 * scaledSqDist(q, k, h)
}

// Scores returns −‖q − k‖² / (2h²), with the squared distances computed directly.
func (Gaussian) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "gaussian", q, k) {
		return nil
	}
	return h.divide(g, g.Scale(g.PairwiseDist(q, k, true), -0.5), 2)
}

// ONNXScores writes −‖q − k‖² / (2h²) into g.
func (Gaussian) ONNXScores(g *onnx.Graph, q, k string, h ONNXWidth) string {
	return h.divide(g, g.Scale(onnxSqDist(g, q, k), -0.5), 2)
}

// pairKernel returns the kernel's fast path (autodiff.PairKernel, see pairOf).
func (k Gaussian) pairKernel() autodiff.PairKernel { return gaussianPair(k) }

// gaussianPair is Gaussian's fast path: its scores and gradients from the pair terms, in
// float64 rows and float32 ones.
type gaussianPair Gaussian

// Name returns Gaussian's spec.
func (k gaussianPair) Name() string { return Gaussian(k).Name() }

// PairTerms reads the squared distance (autodiff.PairKernel, for the tiled local mean).
func (gaussianPair) PairTerms() (dot, dist bool) { return false, true }

// PairScores sets s = −‖q − k‖² / (2h²).
func (gaussianPair) PairScores(s, _, d2 []float64, h float64) {
	c := -1 / (2 * h * h)
	for j, x := range d2 {
		s[j] = c * x
	}
}

// PairGrads returns the gradients of −‖q − k‖² / (2h²).
func (gaussianPair) PairGrads(gs, _, d2 []float64, h float64, _, gd2 []float64) float64 {
	c := -1 / (2 * h * h)
	var gh float64
	for j, g := range gs {
		gd2[j] = c * g
		gh += g * d2[j]
	}
	return gh / (h * h * h)
}

// PairFactor32 returns −1/(2h²), the factor of the squared distance in the log-score,
// and its derivative 1/h³ (autodiff.LinearPairKernel32).
func (gaussianPair) PairFactor32(h float32) (float32, float64) {
	return -1 / (2 * h * h), 1 / float64(h*h*h)
}

// PairScores32 sets s = −‖q − k‖² / (2h²) from the terms x (autodiff.PairKernel32; s may
// be x).
func (gaussianPair) PairScores32(s, x []float32, h float32) {
	c, _ := gaussianPair{}.PairFactor32(h)
	autodiff.Scale32(s[:len(x)], x, c)
}

// PairGrads32 is PairGrads in float32, in place.
func (gaussianPair) PairGrads32(g, x []float32, h float32) float64 {
	c, dc := gaussianPair{}.PairFactor32(h)
	return autodiff.ScaleDot32(g, x, c) * dc
}
