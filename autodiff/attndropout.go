package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
)

// LocalMeanDropout is LocalMean with dropout on its weights, in training mode: each
// normalised weight w_ts is zeroed with probability p and the kept ones are scaled by
// 1/(1−p) before the values are averaged, m_t = Σ_s w_ts·keep_ts/(1−p)·v_s (the
// dropout on the attention weights of GPT-2 and PyTorch's attention). In evaluation
// mode, or when p is 0, it is LocalMean itself. Like Dropout's, its masks come from the
// graph's generator, one draw per forward pass, which a counter-based hash expands to a
// mask over the weights; the backward pass reads the dropped weights it kept. p must be
// in [0, 1).
func (g *Graph) LocalMeanDropout(scores, values, keyMask *Node, mask Mask, p float64) *Node {
	if !(p >= 0 && p < 1) {
		return g.failf("LocalMeanDropout: p = %g, want 0 ≤ p < 1", p)
	}
	if !g.Training() || p == 0 {
		return g.LocalMean(scores, values, keyMask, mask)
	}
	if g.rng == nil {
		return g.failf("LocalMeanDropout: the graph has no random generator")
	}
	g.usesRNG = true
	return g.localMean(scores, values, keyMask, mask, &localMeanDropoutKernel{p: p, rng: g.rng})
}

// localMeanDropoutKernel implements LocalMeanDropout: localMeanKernel's weights, and the
// dropped weights beside them for the product and the backward pass. It is impure: two
// never merge.
type localMeanDropoutKernel struct {
	*localMeanKernel
	p    float64
	rng  *rand.Rand
	dw32 []float32
	dw64 []float64
}

func (k *localMeanDropoutKernel) impure()        {}
func (k *localMeanDropoutKernel) opName() string { return "LocalMeanDropout" }
func (k *localMeanDropoutKernel) hashAttrs() string {
	return fmt.Sprintf("%s{p=%g}", k.localMeanKernel.hashAttrs(), k.p)
}

func (k *localMeanDropoutKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	d := dimsOf(in[0].Shape(), in[1].Shape())
	seed := k.rng.Uint64()
	switch in[0].Dtype() {
	case Float32:
		s := in[0].Float32s()
		if len(k.w32) != len(s) {
			k.w32, k.dw32 = make([]float32, len(s)), make([]float32, len(s))
		}
		drop := newWeightDrop(k.p, seed, k.dw32)
		localMeanForwardDrop(d, k.mask, gemm.Sgemm, s, in[1].Float32s(), keyMaskData[float32](in, k.keyMasked), k.w32, out.Float32s(), drop)
	case Float64:
		s := in[0].Float64s()
		if len(k.w64) != len(s) {
			k.w64, k.dw64 = make([]float64, len(s)), make([]float64, len(s))
		}
		drop := newWeightDrop(k.p, seed, k.dw64)
		localMeanForwardDrop(d, k.mask, gemm.Dgemm, s, in[1].Float64s(), keyMaskData[float64](in, k.keyMasked), k.w64, out.Float64s(), drop)
	}
	return nil
}

func (k *localMeanDropoutKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	d := dimsOf(in[0].Shape(), in[1].Shape())
	switch gout.Dtype() {
	case Float32:
		dm := gout.Float32s()
		if wrt == 1 {
			localMeanGradValues(d, k.mask, gemm.Sgemm, k.dw32, dm, dst.Float32s())
			return nil
		}
		localMeanGradScoresDrop(d, k.mask, gemm.Sgemm, k.w32, k.dw32, in[1].Float32s(), dm, dst.Float32s())
	case Float64:
		dm := gout.Float64s()
		if wrt == 1 {
			localMeanGradValues(d, k.mask, gemm.Dgemm, k.dw64, dm, dst.Float64s())
			return nil
		}
		localMeanGradScoresDrop(d, k.mask, gemm.Dgemm, k.w64, k.dw64, in[1].Float64s(), dm, dst.Float64s())
	}
	return nil
}

// weightDrop is the dropout of a local mean's weights in one forward pass: weight i is
// kept when the hash of (seed, i) is at least threshold (probability 1−p), and the
// dropped weights w·keep/(1−p) go to dw.
type weightDrop[T float] struct {
	seed, threshold uint64
	scale           T
	dw              []T
}

func newWeightDrop[T float](p float64, seed uint64, dw []T) *weightDrop[T] {
	return &weightDrop[T]{seed: seed, threshold: uint64(p * math.Exp2(64)), scale: T(1 / (1 - p)), dw: dw}
}

// apply writes dw[base+j] for j in [lo, hi) from the weights w of the problem at base
// (dw and w both start there).
func (d *weightDrop[T]) apply(dw, w []T, base, lo, hi int) {
	for j := lo; j < hi; j++ {
		if mix64(d.seed+uint64(base+j)*0x9e3779b97f4a7c15) >= d.threshold {
			dw[j] = w[j] * d.scale
		} else {
			dw[j] = 0
		}
	}
}

// mix64 is SplitMix64's finaliser, a bijection of 64-bit words that scatters
// consecutive inputs.
func mix64(x uint64) uint64 {
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
