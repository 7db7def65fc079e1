package autodiff

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
)

// LocalMean is the fused local-mean op of THEORY.md §2, the heart of kernel attention.
// Given log-kernel scores s [N, Tq, Tk] or [B, H, Tq, Tk] and values v [..., Tk, Dv] with
// the same leading dimensions, it returns m [..., Tq, Dv] with
//
//	m_t = Σ_s w_ts v_s,   w_ts = exp(s_ts) / Σ_u exp(s_tu)
//
// normalised per query over the keys that mask and keyMask allow. keyMask is nil or a
// [B, Tk] float tensor whose zero entries mark keys (padding) that no query of that batch
// element may see; B is the first dimension of s. Scores of −Inf (a compact kernel's
// outside) get weight 0. A query that sees no key, or only keys of score −Inf, gets
// m = 0 and zero gradient; a NaN or +Inf among its visible scores makes its m NaN.
// Attention normalises its scores by the same rules.
//
// The gradients are ∂m_t/∂s_ts = w_ts (v_s − m_t) and ∂m_t/∂v_s = w_ts; batch and heads
// run in parallel.
func (g *Graph) LocalMean(scores, values, keyMask *Node, mask Mask) *Node {
	return g.localMean(scores, values, keyMask, mask, nil)
}

// localMean is LocalMean, or LocalMeanDropout's op when drop is not nil.
func (g *Graph) localMean(scores, values, keyMask *Node, mask Mask, drop *localMeanDropoutKernel) *Node {
	if !g.ok("LocalMean", scores, values) {
		return nil
	}
	ss, vs := scores.n.Shape(), values.n.Shape()
	if ss.Dims() < 3 || ss.Dims() > 4 || vs.Dims() != ss.Dims() {
		return g.failf("LocalMean: scores %v and values %v (want [N,Tq,Tk] or [B,H,Tq,Tk] and [...,Tk,Dv])", ss, vs)
	}
	nd := ss.Dims()
	for i := 0; i < nd-2; i++ {
		if ss[i] != vs[i] {
			return g.failf("LocalMean: leading dimensions of scores %v and values %v differ", ss, vs)
		}
	}
	if ss[nd-1] != vs[nd-2] {
		return g.failf("LocalMean: scores %v have %d keys but values %v have %d", ss, ss[nd-1], vs, vs[nd-2])
	}
	if mask.Window < 0 {
		return g.failf("LocalMean: negative window %d", mask.Window)
	}
	k := &localMeanKernel{mask: mask}
	var op fusedKernel = k
	if drop != nil {
		drop.localMeanKernel = k
		op = drop
	}
	if keyMask == nil {
		return g.applyFused(op, scores, values)
	}
	if !g.ok("LocalMean", keyMask) {
		return nil
	}
	ks := keyMask.n.Shape()
	if ks.Dims() != 2 || ks[0] != ss[0] || ks[1] != ss[nd-1] {
		return g.failf("LocalMean: key mask %v, want [%d, %d] for scores %v", ks, ss[0], ss[nd-1], ss)
	}
	k.keyMasked, k.keyMask = true, keyMask
	return g.applyFused(op, scores, values, keyMask)
}

type localMeanKernel struct {
	mask      Mask
	keyMasked bool
	keyMask   *Node // the key mask input, for LocalMeanWeights
	// w caches the normalised weights of the last forward pass for the backward pass.
	// Only the key blocks that keyRange leaves visible are written (see localMeanForward).
	w32 []float32
	w64 []float64
}

func (k *localMeanKernel) opName() string { return "LocalMean" }
func (k *localMeanKernel) hashAttrs() string {
	return fmt.Sprintf("%v{keymask:%v}", k.mask, k.keyMasked)
}
func (k *localMeanKernel) arity() int {
	if k.keyMasked {
		return 3
	}
	return 2
}
func (k *localMeanKernel) diffWRT() []bool     { return []bool{true, true, false}[:k.arity()] }
func (k *localMeanKernel) floatInputs() []bool { return []bool{true, true, true}[:k.arity()] }
func (k *localMeanKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	s := in[0].Clone()
	s[s.Dims()-1] = in[1][in[1].Dims()-1]
	return s, nil
}

// lmDims are the sizes of one local-mean problem.
type lmDims struct {
	n, heads, tq, tk, dv int
}

func dimsOf(scores, values tensor.Shape) lmDims {
	nd := scores.Dims()
	d := lmDims{tq: scores[nd-2], tk: scores[nd-1], dv: values[nd-1], heads: 1}
	d.n = scores.TotalSize() / (d.tq * d.tk)
	if nd == 4 {
		d.heads = scores[1]
	}
	return d
}

func (k *localMeanKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	d := dimsOf(in[0].Shape(), in[1].Shape())
	switch in[0].Dtype() {
	case Float32:
		s := in[0].Float32s()
		if len(k.w32) != len(s) {
			k.w32 = make([]float32, len(s))
		}
		localMeanForward(d, k.mask, gemm.Sgemm, s, in[1].Float32s(), keyMaskData[float32](in, k.keyMasked), k.w32, out.Float32s())
	case Float64:
		s := in[0].Float64s()
		if len(k.w64) != len(s) {
			k.w64 = make([]float64, len(s))
		}
		localMeanForward(d, k.mask, gemm.Dgemm, s, in[1].Float64s(), keyMaskData[float64](in, k.keyMasked), k.w64, out.Float64s())
	}
	return nil
}

func keyMaskData[T float](in []*tensor.Dense, masked bool) []T {
	if !masked {
		return nil
	}
	return flat[T](in[2])
}

// localMeanForward works per (batch·head) problem in blocks of rowBlock queries: it
// normalises the scores of the block's rows into w over the union [clo, chi) of the
// keys they may see (keyRange; zero where a row's own mask hides a key) and sets
// m[r0:r1] = w[r0:r1, clo:chi]·v[clo:chi] with one matrix product. Entries of w outside
// [clo, chi) are neither written nor read (the backward pass uses the same blocks), so
// fully masked key blocks (a causal mask's upper triangle) cost nothing.
func localMeanForward[T float](d lmDims, mask Mask, mm gemmFunc[T], s, v, keyMask, w, m []T) {
	localMeanForwardDrop(d, mask, mm, s, v, keyMask, w, m, nil)
}

// localMeanForwardDrop is localMeanForward, with dropout on the weights when drop is not
// nil: the product reads the dropped weights, which it writes into drop.dw.
func localMeanForwardDrop[T float](d lmDims, mask Mask, mm gemmFunc[T], s, v, keyMask, w, m []T, drop *weightDrop[T]) {
	parallelFor(d.n, d.tq*d.tk*(d.dv+4), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			sp := s[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			wp := w[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			vp := v[p*d.tk*d.dv : (p+1)*d.tk*d.dv]
			mp := m[p*d.tq*d.dv : (p+1)*d.tq*d.dv]
			var km []T
			if keyMask != nil {
				b := p / d.heads
				km = keyMask[b*d.tk : (b+1)*d.tk]
			}
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				clo, chi := keyRange(mask, r0, r1, d.tk)
				if chi <= clo {
					clear(mp[r0*d.dv : r1*d.dv])
					continue
				}
				for t := r0; t < r1; t++ {
					softmaxVisible(sp[t*d.tk:(t+1)*d.tk], wp[t*d.tk:(t+1)*d.tk], km, mask, t, clo, chi)
				}
				use := wp
				if drop != nil {
					use = drop.dw[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
					for t := r0; t < r1; t++ {
						drop.apply(use, wp, p*d.tq*d.tk, t*d.tk+clo, t*d.tk+chi)
					}
				}
				mm(false, false, r1-r0, d.dv, chi-clo, 1, use[r0*d.tk+clo:], d.tk, vp[clo*d.dv:], d.dv, 0, mp[r0*d.dv:], d.dv)
			}
		}
	})
}

// dot64 returns Σ x·y accumulated in float64.
func dot64[T float](x, y []T) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i]) * float64(y[i])
		s1 += float64(x[i+1]) * float64(y[i+1])
		s2 += float64(x[i+2]) * float64(y[i+2])
		s3 += float64(x[i+3]) * float64(y[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * float64(y[i])
	}
	return (s0 + s1) + (s2 + s3)
}

func (k *localMeanKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	d := dimsOf(in[0].Shape(), in[1].Shape())
	switch gout.Dtype() {
	case Float32:
		dm := gout.Float32s()
		if wrt == 1 {
			localMeanGradValues(d, k.mask, gemm.Sgemm, k.w32, dm, dst.Float32s())
			return nil
		}
		localMeanGradScores(d, k.mask, gemm.Sgemm, k.w32, in[1].Float32s(), dm, dst.Float32s())
	case Float64:
		dm := gout.Float64s()
		if wrt == 1 {
			localMeanGradValues(d, k.mask, gemm.Dgemm, k.w64, dm, dst.Float64s())
			return nil
		}
		localMeanGradScores(d, k.mask, gemm.Dgemm, k.w64, in[1].Float64s(), dm, dst.Float64s())
	}
	return nil
}

// localMeanGradValues computes dv_s = Σ_t w_ts dm_t, that is dV = Wᵀ·dM over the key
// blocks of the forward pass.
func localMeanGradValues[T float](d lmDims, mask Mask, mm gemmFunc[T], w, dm, dv []T) {
	parallelFor(d.n, d.tq*d.tk*(d.dv+1), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			wp := w[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			dmp := dm[p*d.tq*d.dv : (p+1)*d.tq*d.dv]
			dvp := dv[p*d.tk*d.dv : (p+1)*d.tk*d.dv]
			clear(dvp)
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				clo, chi := keyRange(mask, r0, r1, d.tk)
				if chi > clo {
					mm(true, false, chi-clo, d.dv, r1-r0, 1, wp[r0*d.tk+clo:], d.tk, dmp[r0*d.dv:], d.dv, 1, dvp[clo*d.dv:], d.dv)
				}
			}
		}
	})
}

// localMeanGradScores computes ds_ts = w_ts (a_ts − Σ_u w_tu a_tu) with A = dM·Vᵀ (one
// matrix product per key block, written into ds), using dm_t·m_t = Σ_s w_ts a_ts so that
// m itself is not needed.
func localMeanGradScores[T float](d lmDims, mask Mask, mm gemmFunc[T], w, v, dm, ds []T) {
	localMeanGradScoresDrop(d, mask, mm, w, nil, v, dm, ds)
}

// localMeanGradScoresDrop is localMeanGradScores for the dropped weights dw of the
// forward pass (nil: none dropped): with D = dw, ds_ts = D_ts a_ts − w_ts Σ_u D_tu a_tu.
func localMeanGradScoresDrop[T float](d lmDims, mask Mask, mm gemmFunc[T], w, dw, v, dm, ds []T) {
	parallelFor(d.n, d.tq*d.tk*(d.dv+2), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			wp := w[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			dsp := ds[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			vp := v[p*d.tk*d.dv : (p+1)*d.tk*d.dv]
			dmp := dm[p*d.tq*d.dv : (p+1)*d.tq*d.dv]
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				clo, chi := keyRange(mask, r0, r1, d.tk)
				if chi <= clo {
					clear(dsp[r0*d.tk : r1*d.tk])
					continue
				}
				mm(false, true, r1-r0, chi-clo, d.dv, 1, dmp[r0*d.dv:], d.dv, vp[clo*d.dv:], d.dv, 0, dsp[r0*d.tk+clo:], d.tk)
				for t := r0; t < r1; t++ {
					dst := dsp[t*d.tk : (t+1)*d.tk]
					clear(dst[:clo])
					clear(dst[chi:])
					wr, ar := wp[t*d.tk+clo:t*d.tk+chi], dst[clo:chi]
					if dw != nil {
						dr := dw[p*d.tq*d.tk+t*d.tk+clo : p*d.tq*d.tk+t*d.tk+chi]
						c := T(dot64(dr, ar))
						ar = ar[:len(wr)]
						for j, wj := range wr {
							ar[j] = dr[j]*ar[j] - wj*c
						}
						continue
					}
					c := T(dot64(wr, ar))
					ar = ar[:len(wr)]
					for j, wj := range wr {
						ar[j] = wj * (ar[j] - c)
					}
				}
			}
		}
	})
}
