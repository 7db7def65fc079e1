package layers

import (
	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(contentForm(Exponential{}, "log K = q·k / h; at h = √d_head standard attention"))
}

// Exponential is the dot-product kernel, log K(q, k) = q·k / h.
// With h = sqrt(d_head) it is the softmax kernel of standard attention.
type Exponential struct{}

// Name returns "exponential".
func (Exponential) Name() string { return "exponential" }

// MarshalText returns the spec.
func (k Exponential) MarshalText() ([]byte, error) { return []byte(k.Name()), nil }

// UnmarshalText parses a spec of this kernel.
func (k *Exponential) UnmarshalText(b []byte) error { return unmarshalTerm(b, k) }

// LogK returns q·k / h. It panics if len(q) != len(k).
func (Exponential) LogK(q, k []float64, h float64) float64 {
	checkLen(q, k)
	var dot float64
	for i, v := range q {
		dot += v * k[i]
	}
	return dot / h
}

// Scores returns q·k / h (one batched matrix product).
func (Exponential) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "exponential", q, k) {
		return nil
	}
	return h.divide(g, g.BatchedMatMul(q, k, false, true), 1)
}

// ONNXScores writes q·k / h into g.
func (Exponential) ONNXScores(g *onnx.Graph, q, k string, h ONNXWidth) string {
	return h.divide(g, g.MatMul(q, g.Transpose(k, 0, 1, 3, 2)), 1)
}

// pairKernel returns the kernel's fast path (autodiff.PairKernel, see pairOf).
func (k Exponential) pairKernel() autodiff.PairKernel { return exponentialPair(k) }

// exponentialPair is Exponential's fast path: its scores and gradients from the pair terms, in
// float64 rows and float32 ones.
type exponentialPair Exponential

// Name returns Exponential's spec.
func (k exponentialPair) Name() string { return Exponential(k).Name() }

// PairTerms reads the dot product (autodiff.PairKernel, for the tiled local mean).
func (exponentialPair) PairTerms() (dot, dist bool) { return true, false }

// PairScores sets s = q·k / h.
func (exponentialPair) PairScores(s, dot, _ []float64, h float64) {
	c := 1 / h // as Scores scales, and a product is faster than a quotient
	for j, x := range dot {
		s[j] = x * c
	}
}

// PairGrads returns the gradients of q·k / h.
func (exponentialPair) PairGrads(gs, dot, _ []float64, h float64, gdot, _ []float64) float64 {
	var gh float64
	c := 1 / h
	for j, g := range gs {
		gdot[j] = g * c
		gh -= g * dot[j]
	}
	return gh / (h * h)
}

// PairFactor32 returns 1/h, the factor of the dot product in the log-score, and its
// derivative −1/h² (autodiff.LinearPairKernel32).
func (exponentialPair) PairFactor32(h float32) (float32, float64) { return 1 / h, -1 / float64(h*h) }

// PairScores32 sets s = q·k / h from the terms x (autodiff.PairKernel32; s may be x).
func (exponentialPair) PairScores32(s, x []float32, h float32) {
	c, _ := exponentialPair{}.PairFactor32(h)
	autodiff.Scale32(s[:len(x)], x, c)
}

// PairGrads32 is PairGrads in float32, in place.
func (exponentialPair) PairGrads32(g, x []float32, h float32) float64 {
	c, dc := exponentialPair{}.PairFactor32(h)
	return autodiff.ScaleDot32(g, x, c) * dc
}
