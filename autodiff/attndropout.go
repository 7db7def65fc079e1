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

// AttentionDropout is Attention with dropout on its weights, in training mode: each
// weight w_ts of each batch element and head is zeroed with probability p and the kept
// ones are scaled by 1/(1−p) before the values are averaged, the normalisation using the
// undropped weights (PyTorch's F.dropout of the softmax, nanoGPT's attn_dropout). In
// evaluation mode, or when p is 0, it is Attention itself. It stays one fused op: the
// mask comes from one draw of the graph's generator per forward pass (as Dropout's and
// LocalMeanDropout's do), which a counter-based hash expands over the weights in the
// forward pass and again in the backward pass; it is LocalMeanDropout's mask for the
// same draw, so that the two compute the same function. p must be in [0, 1).
func (g *Graph) AttentionDropout(q, k, v, keyMask *Node, heads int, scale float64, mask Mask, p float64) *Node {
	if !(p >= 0 && p < 1) {
		return g.failf("AttentionDropout: p = %g, want 0 ≤ p < 1", p)
	}
	if !g.Training() || p == 0 {
		return g.Attention(q, k, v, keyMask, heads, scale, mask)
	}
	if g.rng == nil {
		return g.failf("AttentionDropout: the graph has no random generator")
	}
	g.usesRNG = true
	return g.attention(q, k, v, keyMask, heads, scale, mask, &fusedDrop{p: p, rng: g.rng})
}

// attentionDropoutKernel is AttentionDropout's op: attentionKernel with its drop set. It
// is impure: two never merge.
type attentionDropoutKernel struct{ *attentionKernel }

func (k *attentionDropoutKernel) impure()        {}
func (k *attentionDropoutKernel) opName() string { return "AttentionDropout" }
func (k *attentionDropoutKernel) hashAttrs() string {
	return fmt.Sprintf("%s{p=%g}", k.attentionKernel.hashAttrs(), k.drop.p)
}

// kernelAttentionDropout is KernelAttention's op with Dropout, in training:
// kernelAttention with its drop set. It is impure: two never merge.
type kernelAttentionDropout struct{ *kernelAttention }

func (k *kernelAttentionDropout) impure()        {}
func (k *kernelAttentionDropout) opName() string { return "KernelAttentionDropout" }
func (k *kernelAttentionDropout) hashAttrs() string {
	return fmt.Sprintf("%s{p=%g}", k.kernelAttention.hashAttrs(), k.drop.p)
}

// tiledKernelDropout is TiledLocalMean's op with Dropout, in training: tiledKernel with
// its drop set. It is impure: two never merge.
type tiledKernelDropout struct{ *tiledKernel }

func (k *tiledKernelDropout) impure()        {}
func (k *tiledKernelDropout) opName() string { return "TiledLocalMeanDropout" }
func (k *tiledKernelDropout) hashAttrs() string {
	return fmt.Sprintf("%s{p=%g}", k.tiledKernel.hashAttrs(), k.drop.p)
}

// undropped returns the op that a dropout op wraps (its weights are that op's, before
// dropout), or k itself.
func undropped(k fusedKernel) fusedKernel {
	switch d := k.(type) {
	case *localMeanDropoutKernel:
		return d.localMeanKernel
	case *attentionDropoutKernel:
		return d.attentionKernel
	case *kernelAttentionDropout:
		return d.kernelAttention
	}
	return k
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

// dropMask is the dropout mask of one forward pass of an op that drops its weights
// (LocalMeanDropout, AttentionDropout, KernelAttention and TiledLocalMean with
// Dropout): the weight at flat
// index i of the op's [N, Tq, Tk] weights (problem n = b·H + h, query t, key s: i =
// (n·Tq + t)·Tk + s) is kept when the counter-based hash of (seed, i) is at least
// threshold, with probability 1−p, independently per weight. The ops draw seed from the
// graph's generator once per forward pass and regenerate the mask from it in the
// backward pass, so that none stores it, and the same seed gives every op the same mask.
type dropMask struct {
	seed, threshold uint64
}

func newDropMask(p float64, seed uint64) dropMask {
	t := p * math.Exp2(64)
	if t >= math.Exp2(64) { // p within 2⁻⁵³ of 1: drop all but a 2⁻⁶⁴ share
		return dropMask{seed: seed, threshold: math.MaxUint64}
	}
	return dropMask{seed: seed, threshold: uint64(t)}
}

// keep reports whether the weight at flat index i is kept.
func (m dropMask) keep(i int) bool {
	return mix64(m.seed+uint64(i)*0x9e3779b97f4a7c15) >= m.threshold
}

// weightDrop is the dropout of a local mean's weights in one forward pass: the weights
// that mask keeps are scaled by 1/(1−p) and the dropped ones are zeroed, into dw.
type weightDrop[T float] struct {
	mask  dropMask
	scale T
	dw    []T
}

func newWeightDrop[T float](p float64, seed uint64, dw []T) *weightDrop[T] {
	return &weightDrop[T]{mask: newDropMask(p, seed), scale: T(1 / (1 - p)), dw: dw}
}

// apply writes dw[base+j] for j in [lo, hi) from the weights w of the problem at base
// (dw and w both start there).
func (d *weightDrop[T]) apply(dw, w []T, base, lo, hi int) {
	for j := lo; j < hi; j++ {
		if d.mask.keep(base + j) {
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

// fusedDrop is the dropout on the weights of a fused attention op (AttentionDropout,
// KernelAttention and TiledLocalMean with Dropout), which regenerates the mask in its
// backward pass. Per block of query rows (per tile, where the weights are recomputed)
// the forward product reads the dropped weights D = P ⊙ keep/(1−p), the normalisation
// having summed the undropped P. The backward pass takes dV = Dᵀ·dM and, since
// m_t = Σ_s D_ts v_s still gives δ_t = dm_t·m_t = Σ_s P_ts (keep_ts/(1−p))·a_ts with
// A = dM·Vᵀ, the score gradients P ⊙ (A ⊙ keep/(1−p) − δ): the undropped op's, from
// the masked A.
type fusedDrop struct {
	p    float64
	rng  *rand.Rand
	mask dropMask // of the last forward pass
}

// draw starts a forward pass: a fresh mask from the graph's generator.
func (f *fusedDrop) draw() { f.mask = newDropMask(f.p, f.rng.Uint64()) }

// dropBlock writes the dropped weights of the block of queries r0..r1−1 and keys
// clo..chi−1 of the problem whose weights ph start at flat index base into dst, rows of
// width chi − clo.
func dropBlock[T float](f *fusedDrop, dst, ph []T, base, tk, r0, r1, clo, chi int) {
	w, scale := chi-clo, T(1/(1-f.p))
	for t := r0; t < r1; t++ {
		row, drow := ph[t*tk+clo:t*tk+chi], dst[(t-r0)*w:(t-r0+1)*w]
		i0 := base + t*tk + clo
		for j, x := range row {
			if f.mask.keep(i0 + j) {
				drow[j] = x * scale
			} else {
				drow[j] = 0
			}
		}
	}
}

// dropGradBlock is dropBlock for the backward pass: besides the dropped weights in dst
// it scales the block's products a (rows of width chi − clo) by keep/(1−p) in place.
func dropGradBlock[T float](f *fusedDrop, dst, a, ph []T, base, tk, r0, r1, clo, chi int) {
	w, scale := chi-clo, T(1/(1-f.p))
	for t := r0; t < r1; t++ {
		row, drow, arow := ph[t*tk+clo:t*tk+chi], dst[(t-r0)*w:(t-r0+1)*w], a[(t-r0)*w:(t-r0+1)*w]
		i0 := base + t*tk + clo
		for j, x := range row {
			if f.mask.keep(i0 + j) {
				drow[j], arow[j] = x*scale, arow[j]*scale
			} else {
				drow[j], arow[j] = 0, 0
			}
		}
	}
}

// dropTile applies the dropout to a tile of TiledLocalMean's weights x (rows tileKeys
// apart: queries r0..r0+rb−1, keys c0..c0+w−1 of the problem whose weights start at flat
// index base) in place: the kept ones scaled by 1/(1−p), the dropped ones zeroed.
func dropTile[T float](f *fusedDrop, x []T, base, tk, r0, rb, c0, w int) {
	scale := T(1 / (1 - f.p))
	for i := range rb {
		row := x[i*tileKeys : i*tileKeys+w]
		i0 := base + (r0+i)*tk + c0
		for j := range row {
			if f.mask.keep(i0 + j) {
				row[j] *= scale
			} else {
				row[j] = 0
			}
		}
	}
}

// tileFactors writes dropTile's factors, keep/(1−p) or 0, into keep in the tile's layout.
func tileFactors[T float](f *fusedDrop, keep []T, base, tk, r0, rb, c0, w int) {
	scale := T(1 / (1 - f.p))
	for i := range rb {
		row := keep[i*tileKeys : i*tileKeys+w]
		i0 := base + (r0+i)*tk + c0
		for j := range row {
			if f.mask.keep(i0 + j) {
				row[j] = scale
			} else {
				row[j] = 0
			}
		}
	}
}

// transposeTileScaled is transposeTile of src ⊙ f: dst[j·tileRows + i] =
// src[i·tileKeys + j]·f[i·tileKeys + j].
func transposeTileScaled[T float](src, f, dst []T, rows, cols int) {
	for i := range rows {
		fr := f[i*tileKeys : i*tileKeys+cols]
		for j, x := range src[i*tileKeys : i*tileKeys+cols] {
			dst[j*tileRows+i] = x * fr[j]
		}
	}
}

// scaleTile multiplies the tile x by f elementwise (rows tileKeys apart).
func scaleTile[T float](x, f []T, rows, cols int) {
	for i := range rows {
		fr := f[i*tileKeys : i*tileKeys+cols]
		for j := range x[i*tileKeys : i*tileKeys+cols] {
			x[i*tileKeys+j] *= fr[j]
		}
	}
}
