package layers

import (
	"math"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(contentForm(Laplacian{}, "log K = −‖q − k‖ / h: sharper peak, heavier tails than Gaussian"))
}

// Laplacian is the exponential-distance kernel, log K(q, k) = -‖q − k‖ / h.
type Laplacian struct{}

// Name returns "laplacian".
func (Laplacian) Name() string { return "laplacian" }

// MarshalText returns the spec.
func (k Laplacian) MarshalText() ([]byte, error) { return []byte(k.Name()), nil }

// UnmarshalText parses a spec of this kernel.
func (k *Laplacian) UnmarshalText(b []byte) error { return unmarshalTerm(b, k) }

// LogK returns -‖q − k‖ / h. It panics if len(q) != len(k).
func (Laplacian) LogK(q, k []float64, h float64) float64 {
	return -scaledDist(q, k, h)
}

// Scores returns −‖q − k‖ / h; the gradient at q = k is the zero subgradient.
func (Laplacian) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "laplacian", q, k) {
		return nil
	}
	return h.divide(g, g.Neg(g.PairwiseDist(q, k, false)), 1)
}

// ONNXScores writes −‖q − k‖ / h into g.
func (Laplacian) ONNXScores(g *onnx.Graph, q, k string, h ONNXWidth) string {
	return h.divide(g, g.Unary("Neg", onnxDist(g, q, k)), 1)
}

// pairKernel returns the kernel's fast path (autodiff.PairKernel, see pairOf).
func (k Laplacian) pairKernel() autodiff.PairKernel { return laplacianPair(k) }

// laplacianPair is Laplacian's fast path: its scores and gradients from the pair terms, in
// float64 rows and float32 ones.
type laplacianPair Laplacian

// Name returns Laplacian's spec.
func (k laplacianPair) Name() string { return Laplacian(k).Name() }

// PairTerms reads the squared distance (autodiff.PairKernel, for the tiled local mean).
func (laplacianPair) PairTerms() (dot, dist bool) { return false, true }

// PairScores sets s = −‖q − k‖ / h.
func (laplacianPair) PairScores(s, _, d2 []float64, h float64) {
	c := -1 / h // a product per pair is faster than a quotient
	for j, x := range d2 {
		s[j] = c * math.Sqrt(x)
	}
}

// PairGrads returns the gradients of −‖q − k‖ / h, with the zero subgradient at q = k.
func (laplacianPair) PairGrads(gs, _, d2 []float64, h float64, _, gd2 []float64) float64 {
	var gh float64
	c := -0.5 / h // one quotient per pair instead of two
	for j, g := range gs {
		if g == 0 {
			continue
		}
		r := math.Sqrt(d2[j])
		if r == 0 {
			continue
		}
		gd2[j] = c * g / r
		gh += g * r
	}
	return gh / (h * h)
}

// PairDistance32 marks the float32 rows as reading the distance ‖q − k‖
// (autodiff.DistancePairKernel32).
func (laplacianPair) PairDistance32() {}

// PairFactor32 returns −1/h, the factor of the distance in the log-score, and its
// derivative 1/h² (autodiff.LinearPairKernel32).
func (laplacianPair) PairFactor32(h float32) (float32, float64) { return -1 / h, 1 / float64(h*h) }

// PairScores32 sets s = −r / h from the distances r (autodiff.PairKernel32; s may be r).
func (laplacianPair) PairScores32(s, r []float32, h float32) {
	c, _ := laplacianPair{}.PairFactor32(h)
	autodiff.Scale32(s[:len(r)], r, c)
}

// PairGrads32 sets g = g·∂s/∂r = −g / h and returns Σ g·∂s/∂h = Σ g·r / h².
func (laplacianPair) PairGrads32(g, r []float32, h float32) float64 {
	c, dc := laplacianPair{}.PairFactor32(h)
	return autodiff.ScaleDot32(g, r, c) * dc
}
