package layers

import (
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
