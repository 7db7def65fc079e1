package autodiff

import (
	"fmt"
	"math/rand/v2"

	"gorgonia.org/tensor"
)

// Dropout zeroes each element of x with probability p and scales the kept ones by
// 1/(1−p), in training mode. In evaluation mode, or when p is 0, it returns x itself.
// Masks are drawn from the graph's generator (the Model's, which checkpoints can save
// and restore), so runs are reproducible from a seed; every Dropout call draws its own
// mask, even on the same input. p must be in [0, 1).
func (g *Graph) Dropout(x *Node, p float64) *Node {
	if !g.ok("Dropout", x) {
		return nil
	}
	if !(p >= 0 && p < 1) {
		return g.failf("Dropout: p = %g, want 0 ≤ p < 1", p)
	}
	if !g.Training() || p == 0 {
		return x
	}
	if g.rng == nil {
		return g.failf("Dropout: the graph has no random generator")
	}
	g.usesRNG = true
	return g.applyFused(&dropoutKernel{p: p, rng: g.rng}, x)
}

// dropoutKernel implements Graph.Dropout. Forward draws a fresh mask and caches it for
// backward. It is impure: two dropouts never merge.
type dropoutKernel struct {
	p    float64
	rng  *rand.Rand
	keep []bool // written by forward
}

func (k *dropoutKernel) impure()             {}
func (k *dropoutKernel) opName() string      { return "Dropout" }
func (k *dropoutKernel) hashAttrs() string   { return fmt.Sprintf("{p=%g}", k.p) }
func (k *dropoutKernel) arity() int          { return 1 }
func (k *dropoutKernel) diffWRT() []bool     { return []bool{true} }
func (k *dropoutKernel) floatInputs() []bool { return []bool{true} }
func (k *dropoutKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return in[0].Clone(), nil
}

func (k *dropoutKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	n := in[0].Shape().TotalSize()
	if cap(k.keep) < n {
		k.keep = make([]bool, n)
	}
	k.keep = k.keep[:n]
	for i := range k.keep {
		k.keep[i] = k.rng.Float64() >= k.p
	}
	if isF32(in[0]) {
		applyMask(k.keep, 1/(1-k.p), flat[float32](in[0]), flat[float32](out))
	} else {
		applyMask(k.keep, 1/(1-k.p), flat[float64](in[0]), flat[float64](out))
	}
	return nil
}

// gradReads: the gradient is the upstream gradient through the kernel's own mask.
func (k *dropoutKernel) gradReads(int) []bool { return reads(1) }

func (k *dropoutKernel) backward(_ int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	if len(k.keep) != in[0].Shape().TotalSize() {
		return fmt.Errorf("backward ran before forward")
	}
	if isF32(in[0]) {
		applyMask(k.keep, 1/(1-k.p), flat[float32](gout), flat[float32](dst))
	} else {
		applyMask(k.keep, 1/(1-k.p), flat[float64](gout), flat[float64](dst))
	}
	return nil
}

// applyMask sets dst[i] = x[i]·scale where keep[i], else 0.
func applyMask[T float](keep []bool, scale float64, x, dst []T) {
	const block = 4096
	blocks := (len(x) + block - 1) / block
	parallelFor(blocks, block, func(lo, hi int) {
		for i := lo * block; i < min(hi*block, len(x)); i++ {
			if keep[i] {
				dst[i] = T(float64(x[i]) * scale)
			} else {
				dst[i] = 0
			}
		}
	})
}
